import { Transform } from 'class-transformer';
import { IsUUID } from '../../common/validation/class-validator-parts';

/**
 * A server-minted id named in a body (`request_id`, `pause_id`): a UUID, which the server mints in
 * lower case, so it is read case-insensitively — lower-cased here, as `parseUuidParam` does for the
 * same ids in a path. Client ids (`session_id`, `task_id`) are the opposite: kept exactly as sent,
 * everywhere (client-id.ts).
 */
export function IsServerId(name: 'request_id' | 'pause_id'): PropertyDecorator {
  return (target, key) => {
    Transform(({ value }: { value: unknown }) => (typeof value === 'string' ? value.toLowerCase() : value))(target, key);
    IsUUID('all', { message: `${name} must be a UUID` })(target, key);
  };
}
