import type { Logger } from 'pino';
import type { GovernanceConfig, ToolPolicy } from '../agents/config/governance.schema';
import type { LlmToolSpec } from '../llm/llm-client.port';
import { errorMessage } from './tool-error';
import type { Tool } from './tool.port';

/** Tools known only at run time (an MCP server's list). */
export interface ToolSource {
  readonly name: string;
  /** What the model's answer may say when the source cannot be listed (`MCP server X unreachable`). */
  readonly unreachable?: string;
  list(): Promise<Tool[]>;
}

/**
 * The tools of one agent: fixed ones (plugins, OpenAPI operations) known at boot, and sources
 * listed on first use (MCP servers). `spec.governance.tools` overrides the risk and the approval
 * rule of a tool by its name. A source that cannot be listed is left out of this request (logged)
 * and asked again on the next one.
 */
export class Toolset {
  private readonly governed = new WeakMap<Tool, Tool>();

  constructor(
    private readonly fixed: Tool[],
    private readonly sources: ToolSource[] = [],
    /** The governance policy of a tool by name (`spec.governance.tools`, then the plugin catalog). */
    private readonly policyOf: (name: string) => ToolPolicy | undefined = () => undefined,
    private readonly logger?: Logger,
  ) {}

  static readonly EMPTY = new Toolset([]);

  get isEmpty(): boolean {
    return this.fixed.length === 0 && this.sources.length === 0;
  }

  /**
   * Every tool of the agent now, by the name the model uses. Each source that cannot be listed
   * adds its `unreachable` note to `unavailable`, when given.
   */
  async resolve(unavailable?: string[]): Promise<ReadonlyMap<string, Tool>> {
    const byName = new Map<string, Tool>();
    const add = (t: Tool) => {
      if (byName.has(t.name)) {
        this.logger?.warn({ tool: t.name, source: t.source, kept: byName.get(t.name)!.source }, 'duplicate tool name; the first is kept');
        return;
      }
      byName.set(t.name, this.withPolicy(t));
    };
    this.fixed.forEach(add);
    const listed = await Promise.all(
      this.sources.map((s) =>
        s.list().catch((err: unknown) => {
          this.logger?.warn({ source: s.name, err: errorMessage(err) }, 'tool source unavailable; its tools are left out of this request');
          unavailable?.push(s.unreachable ?? `${s.name} unreachable`);
          return [] as Tool[];
        }),
      ),
    );
    listed.flat().forEach(add);
    return byName;
  }

  private withPolicy(tool: Tool): Tool {
    const policy = this.policyOf(tool.name);
    if (!policy || (policy.risk === undefined && policy.requires_hitl === undefined)) return tool;
    let governed = this.governed.get(tool);
    if (!governed) {
      governed = {
        name: tool.name,
        description: tool.description,
        parameters: tool.parameters,
        source: tool.source,
        idempotent: tool.idempotent,
        timeoutMs: tool.timeoutMs,
        risk: policy.risk ?? tool.risk,
        requiresHitl: policy.requires_hitl ?? tool.requiresHitl,
        execute: (args, ctx) => tool.execute(args, ctx),
      };
      this.governed.set(tool, governed);
    }
    return governed;
  }
}

/** `spec.governance.tools.<name>` (a Map once validated; a plain object when built by hand). */
export function governancePolicy(governance: GovernanceConfig | undefined, name: string): ToolPolicy | undefined {
  const policies = governance?.tools;
  if (!policies) return undefined;
  return policies instanceof Map ? policies.get(name) : (policies as Record<string, ToolPolicy>)[name];
}

/** What the model is told about each tool. */
export function toolSpecs(tools: ReadonlyMap<string, Tool>): LlmToolSpec[] {
  return [...tools.values()].map((t) => ({ name: t.name, description: t.description, parameters: t.parameters }));
}
