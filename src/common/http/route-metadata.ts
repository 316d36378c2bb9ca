/** Per metadata key, per decorated class or handler: its value, absent ones included (a miss is a lookup too). */
const read = new Map<string, WeakMap<object, unknown>>();

/**
 * `Reflect.getMetadata(key, target)`, looked up once per key and target: a route's decorators set
 * their metadata when its class is made and nothing changes it after, while `Reflect.getMetadata`
 * walks the metadata maps of the target and its prototypes on every call, and the guards and
 * interceptors ask on every request. For metadata set at declaration only (not by code that runs later).
 */
export function routeMetadata<T>(key: string, target: object): T | undefined {
  let ofKey = read.get(key);
  if (!ofKey) read.set(key, (ofKey = new WeakMap()));
  if (ofKey.has(target)) return ofKey.get(target) as T | undefined;
  const value = Reflect.getMetadata(key, target) as T | undefined;
  ofKey.set(target, value);
  return value;
}
