import type { ToolContext } from '../tool.port';
import { pluginTools } from './plugin-tools';
import type { PluginDefinition } from './plugin.types';

const ctx = (): ToolContext => ({ signal: new AbortController().signal, principal: { tenantId: 't', ownerId: 'o' } });

describe('pluginTools: ctx.extraData', () => {
  it("collects what a handler adds into the output's extraData, a fresh collector per call", async () => {
    let calls = 0;
    const plugin: PluginDefinition = {
      name: 'Ctx',
      tools: [
        {
          name: 'remember',
          description: 'd',
          handler: (args, c) => {
            c.extraData!('city', String(args.city));
            if (++calls === 1) c.extraData!('first', 'yes');
            return { ok: true };
          },
        },
        { name: 'plain', description: 'd', handler: () => 'plain' },
      ],
    };
    const [remember, plain] = pluginTools(plugin);
    expect(await remember!.execute({ city: 'Oslo' }, ctx())).toEqual({
      content: '{"ok":true}',
      extraData: [
        { key: 'city', value: 'Oslo' },
        { key: 'first', value: 'yes' },
      ],
    });
    expect(await remember!.execute({ city: 'Bergen' }, ctx())).toEqual({ content: '{"ok":true}', extraData: [{ key: 'city', value: 'Bergen' }] });
    expect(await plain!.execute({}, ctx())).toEqual({ content: 'plain' });
  });
});
