import { Injectable } from '@nestjs/common';
import { newUuid } from '../../common/ids/uuid.util';
import type { Principal } from '../../auth/principal';

/** The elicitation ids we send: `ta-decide.{request_id}.{pause_id}.{nonce}`, so any replica can tell which pause an answer decides. */
const PREFIX = 'ta-decide.';

interface Waiter {
  owner: string;
  resolve: (answer: unknown) => void;
}

/** Where an elicitation id points. */
export interface ElicitationTarget {
  requestId: string;
  pauseId: string;
}

/**
 * The elicitations this replica waits for. A tool call that asks its client to decide a pause
 * sends `elicitation/create` with an id of ours and waits here; the client's answer comes as a
 * separate POST (Streamable HTTP), which the controller hands to `deliver`. Only the caller who
 * was asked can answer (same tenant and user). An answer for an id no one here waits for (another
 * replica's, or one given up on) is the controller's to decide from the id itself.
 */
@Injectable()
export class McpElicitationsService {
  private readonly waiting = new Map<string, Waiter>();

  /** A new elicitation about `target`: its id, the answer (the JSON-RPC `result`, or the error), and `close` to stop waiting. */
  open(principal: Principal, target: ElicitationTarget): { id: string; answer: Promise<unknown>; close: () => void } {
    const id = `${PREFIX}${target.requestId}.${target.pauseId}.${newUuid()}`;
    let close!: () => void;
    const answer = new Promise<unknown>((resolve) => {
      this.waiting.set(id, { owner: ownerOf(principal), resolve });
      close = () => {
        this.waiting.delete(id);
        resolve(undefined);
      };
    });
    return { id, answer, close };
  }

  /** Hands an answer to the tool call waiting for it; false when no call of this caller waits here. */
  deliver(principal: Principal, id: string, answer: unknown): boolean {
    const waiter = this.waiting.get(id);
    if (!waiter || waiter.owner !== ownerOf(principal)) return false;
    this.waiting.delete(id);
    waiter.resolve(answer);
    return true;
  }
}

/** The pause an elicitation id of ours is about; undefined for any other id. */
export function elicitationTarget(id: unknown): ElicitationTarget | undefined {
  if (typeof id !== 'string' || !id.startsWith(PREFIX)) return undefined;
  const [requestId, pauseId] = id.slice(PREFIX.length).split('.');
  return requestId && pauseId ? { requestId, pauseId } : undefined;
}

function ownerOf(p: Principal): string {
  return `${p.tenantId}\u0000${p.ownerId}`;
}
