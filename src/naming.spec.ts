import { readdirSync, readFileSync } from 'node:fs';
import { basename, join, relative } from 'node:path';
import * as ts from 'typescript';

/**
 * One naming rule for injectables (docs/testing.md, Naming): a class Nest injects (`@Injectable()`)
 * ends with its role — Service, Guard, Interceptor or Gateway — and lives in the file named after
 * it: `<name>.<role>.ts`, where `<name>` is the rest of the class name in kebab case
 * (`TaskWriterService` in `task-writer.service.ts`, `AuthGuard` in `auth.guard.ts`). So a reader
 * finds a class by its file, and its role by either. Modules and controllers are built by factories
 * here (`createV3AgentController`), and their files already end with `.module.ts`/`.controller.ts`.
 */
const ROLES = ['Service', 'Guard', 'Interceptor', 'Gateway'] as const;

const kebab = (name: string) =>
  name
    .replace(/([a-z0-9])([A-Z])/g, '$1-$2')
    .replace(/([A-Z])([A-Z][a-z])/g, '$1-$2')
    .toLowerCase();

/** The injectable classes a file declares, and what the rule says of each (empty when it holds). */
export function namingProblems(fileName: string, text: string): string[] {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const problems: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isClassDeclaration(node) && node.name) {
      const injectable = (ts.getDecorators(node) ?? []).some(
        (d) => ts.isCallExpression(d.expression) && ts.isIdentifier(d.expression.expression) && d.expression.expression.text === 'Injectable',
      );
      if (injectable) {
        const name = node.name.text;
        const role = ROLES.find((r) => name.endsWith(r) && name.length > r.length);
        const expected = role ? `${kebab(name.slice(0, -role.length))}.${role.toLowerCase()}.ts` : undefined;
        if (!role) problems.push(`${fileName}: class ${name} does not end with a role (${ROLES.join(', ')})`);
        else if (basename(fileName) !== expected) problems.push(`${fileName}: class ${name} belongs in ${expected}`);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return problems;
}

function sources(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts') && !e.name.endsWith('.spec.ts'))
    .map((e) => join(e.parentPath, e.name));
}

describe('naming of injectables', () => {
  it('every @Injectable() class ends with its role and lives in <name>.<role>.ts', () => {
    const src = __dirname;
    const problems = sources(src).flatMap((file) => namingProblems(relative(src, file), readFileSync(file, 'utf8')));
    expect(problems).toEqual([]);
  });

  it('names a class without a role and a class in a file not named after it (the check can fail)', () => {
    const text = (cls: string) => `import { Injectable } from '@nestjs/common';\n@Injectable()\nexport class ${cls} {}\n`;
    expect(namingProblems('tasks/task-writer.ts', text('TaskWriter'))).toEqual([
      'tasks/task-writer.ts: class TaskWriter does not end with a role (Service, Guard, Interceptor, Gateway)',
    ]);
    expect(namingProblems('tasks/session-list.service.ts', text('SessionListingService'))).toEqual([
      'tasks/session-list.service.ts: class SessionListingService belongs in session-listing.service.ts',
    ]);
    expect(namingProblems('tasks/task-writer.service.ts', text('TaskWriterService'))).toEqual([]);
    expect(namingProblems('auth/auth.guard.ts', text('AuthGuard'))).toEqual([]);
    expect(namingProblems('api/ag-ui/ag-ui-runs.service.ts', text('AgUiRunsService'))).toEqual([]);
    expect(namingProblems('plain.ts', 'export class Plain {}\n')).toEqual([]); // not injectable: no rule
  });
});
