import { BackendBootError } from '../../backend-boot-error';
import { StateStoreUnavailableError } from '../../state.errors';
import { checkRedisEviction } from './redis-eviction';

function source(result: string | undefined | Error) {
  return { maxMemoryPolicy: () => (result instanceof Error ? Promise.reject(result) : Promise.resolve(result)) };
}

describe('checkRedisEviction', () => {
  const warnings: string[] = [];
  const logger = { warn: (m: string) => void warnings.push(m) };
  beforeEach(() => (warnings.length = 0));

  it.each(['allkeys-lru', 'allkeys-lfu', 'allkeys-random'])('refuses %s in production, naming the setting to use', async (policy) => {
    const check = checkRedisEviction(source(policy), { production: true, logger });
    await expect(check).rejects.toBeInstanceOf(BackendBootError);
    await expect(check).rejects.toThrow(`Redis maxmemory-policy is ${policy}`);
    await expect(check).rejects.toThrow(/set maxmemory-policy to noeviction \(or a volatile-\* policy/);
    expect(warnings).toEqual([]);
  });

  it('only warns outside production', async () => {
    await checkRedisEviction(source('allkeys-lru'), { production: false, logger });
    expect(warnings).toEqual([expect.stringMatching(/^Redis maxmemory-policy is allkeys-lru, .*noeviction.*volatile-\*/)]);
  });

  it.each(['noeviction', 'volatile-lru', 'volatile-ttl', undefined])('accepts %s silently', async (policy) => {
    await checkRedisEviction(source(policy), { production: true, logger });
    expect(warnings).toEqual([]);
  });

  it('warns and continues when CONFIG is refused', async () => {
    const refused = Object.assign(new Error("ERR unknown command 'CONFIG'"), { name: 'ReplyError' });
    await checkRedisEviction(source(refused), { production: true, logger });
    expect(warnings).toEqual([expect.stringMatching(/could not be checked \(CONFIG GET was refused: ERR unknown command 'CONFIG'\)/)]);
  });

  it('warns and continues when Redis is unreachable', async () => {
    await checkRedisEviction(source(new StateStoreUnavailableError('Redis is unavailable')), { production: true, logger });
    expect(warnings).toEqual([expect.stringMatching(/could not be checked \(Redis is unreachable\)/)]);
  });
});
