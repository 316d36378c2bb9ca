import { InstructionTemplate, TemplateError } from './instruction-template';

describe('InstructionTemplate', () => {
  const render = (src: string, scope: Record<string, unknown>) => InstructionTemplate.compile(src).render(scope);

  it('substitutes names, attributes and subscripts', () => {
    expect(render('{{a}}-{{ b.c }}-{{d["x y"]}}-{{ d[\'z\'] }}-{{ e[1] }}', { a: 1, b: { c: 'C' }, d: { 'x y': 'X', z: 'Z' }, e: [0, 'one'] })).toBe(
      '1-C-X-Z-one',
    );
  });

  it('renders undefined values as empty, like Jinja', () => {
    expect(render('[{{missing}}][{{a.b.c}}]', { a: {} })).toBe('[][]');
  });

  it('loops over map items and lists, with the outer scope visible', () => {
    expect(render('{% for k, v in m.items() %}{{k}}={{v}}{{sep}}{% endfor %}', { m: { a: '1', b: '2' }, sep: ';' })).toBe('a=1;b=2;');
    expect(render('{% for x in xs %}<{{x.n}}>{% endfor %}', { xs: [{ n: 1 }, { n: 2 }] })).toBe('<1><2>');
  });

  it('supports if / else / not', () => {
    const t = '{% if flag %}yes{% else %}no{% endif %}|{% if not flag %}N{% endif %}';
    expect(render(t, { flag: 'x' })).toBe('yes|');
    expect(render(t, { flag: '' })).toBe('no|N');
  });

  it('drops comments and does not reach Object.prototype', () => {
    expect(render('{# hidden #}{{ constructor }}{{ a.constructor }}', { a: {} })).toBe('');
  });

  it.each([
    ['{% for x in xs %}', /endfor/],
    ['{% if a %}x', /endif/],
    ['{{ a + b }}', /unsupported expression/],
    ['{% macro m() %}', /unsupported statement/],
    ['{% endif %}', /unexpected/],
  ])('rejects %s at compile time', (src, message) => {
    expect(() => InstructionTemplate.compile(src)).toThrow(TemplateError);
    expect(() => InstructionTemplate.compile(src)).toThrow(message);
  });
});
