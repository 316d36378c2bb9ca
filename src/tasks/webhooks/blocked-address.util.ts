import { isIPv4, isIPv6 } from 'node:net';

/**
 * Which addresses a webhook may not reach (SSRF): what is not the public internet. `private` ranges
 * are the ones a deployment may legitimately post to inside its own network, and
 * TA_WEBHOOK_ALLOW_PRIVATE lifts them; the rest (unspecified, link-local with the cloud metadata
 * endpoints, multicast, reserved) stay refused whatever it says, since no receiver lives there.
 */
export interface AddressVerdict {
  /** What the address is, for the refusal message (`loopback`, `link-local`, ...). */
  reason: string;
  /** Lifted by TA_WEBHOOK_ALLOW_PRIVATE. */
  private: boolean;
}

type Range = readonly [bits: bigint, prefix: number, reason: string, isPrivate: boolean];

const v4 = (text: string): bigint => text.split('.').reduce((n, part) => (n << 8n) | BigInt(Number(part)), 0n);

/** RFC 6890 and the IANA special-purpose registries, IPv4; the first match names the address. */
const V4_RANGES: readonly Range[] = (
  [
    // Cloud platform endpoints outside the ranges below, or inside ranges TA_WEBHOOK_ALLOW_PRIVATE
    // lifts: Azure's WireServer (a public address only the VM's host answers) and Alibaba's metadata.
    ['168.63.129.16', 32, 'cloud metadata (Azure WireServer)', false],
    ['100.100.100.200', 32, 'cloud metadata (Alibaba Cloud)', false],
    ['0.0.0.0', 8, 'unspecified', false],
    ['10.0.0.0', 8, 'private', true],
    ['100.64.0.0', 10, 'shared address space (CGNAT)', true],
    ['127.0.0.0', 8, 'loopback', true],
    ['169.254.0.0', 16, 'link-local (cloud metadata)', false],
    ['172.16.0.0', 12, 'private', true],
    ['192.0.0.0', 24, 'reserved (IETF protocol assignments)', false],
    ['192.0.2.0', 24, 'reserved (documentation)', false],
    ['192.88.99.0', 24, 'reserved (6to4 relay)', false],
    ['192.168.0.0', 16, 'private', true],
    ['198.18.0.0', 15, 'reserved (benchmarking)', false],
    ['198.51.100.0', 24, 'reserved (documentation)', false],
    ['203.0.113.0', 24, 'reserved (documentation)', false],
    ['224.0.0.0', 4, 'multicast', false],
    ['240.0.0.0', 4, 'reserved (including broadcast)', false],
  ] as const
).map(([a, p, r, priv]) => [v4(a), p, r, priv] as const);

/** IPv6 text → its 128 bits; `text` is valid (net.isIPv6) and may carry a zone (`%eth0`). */
function v6(text: string): bigint {
  let address = text.split('%')[0]!;
  // A trailing dotted quad (`::ffff:127.0.0.1`) is the last 32 bits.
  const quad = /(\d+\.\d+\.\d+\.\d+)$/.exec(address);
  if (quad) {
    const n = v4(quad[1]!);
    address = `${address.slice(0, -quad[1]!.length)}${(n >> 16n).toString(16)}:${(n & 0xffffn).toString(16)}`;
  }
  const [head, tail] = address.includes('::') ? address.split('::') : [address, undefined];
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const groups = tail === undefined ? left : [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  return groups.reduce((n, g) => (n << 16n) | BigInt(parseInt(g, 16)), 0n);
}

const V6_RANGES: readonly Range[] = (
  [
    ['::', 128, 'unspecified', false],
    ['::1', 128, 'loopback', true],
    // AWS's metadata endpoint over IPv6 sits inside the unique local range: refused even when private ones are allowed.
    ['fd00:ec2::254', 128, 'cloud metadata', false],
    ['fc00::', 7, 'private (unique local)', true],
    ['fe80::', 10, 'link-local', false],
    ['fec0::', 10, 'site-local (deprecated)', true],
    ['ff00::', 8, 'multicast', false],
    ['100::', 64, 'reserved (discard-only)', false],
    ['2001::', 32, 'reserved (Teredo)', false],
    ['2001:2::', 48, 'reserved (benchmarking)', false],
    ['2001:10::', 28, 'reserved (ORCHID)', false],
    ['2001:20::', 28, 'reserved (ORCHIDv2)', false],
    ['2001:db8::', 32, 'reserved (documentation)', false],
    ['3fff::', 20, 'reserved (documentation)', false],
    ['64:ff9b:1::', 48, 'reserved (local-use NAT64)', true],
  ] as const
).map(([a, p, r, priv]) => [v6(a), p, r, priv] as const);

const NAT64_TOP96 = v6('64:ff9b::') >> 32n;

const inRange = (n: bigint, width: number, [bits, prefix]: Range) => n >> BigInt(width - prefix) === bits >> BigInt(width - prefix);

/**
 * The IPv4 address an IPv6 one carries, where it reaches that IPv4 host: mapped (`::ffff:a.b.c.d`),
 * compatible (`::a.b.c.d`), translated (`::ffff:0:a.b.c.d`), NAT64 (`64:ff9b::/96`) and 6to4
 * (`2002:aabb:ccdd::`). Judged as that IPv4 address, so `::ffff:7f00:1` is loopback.
 */
function embeddedV4(n: bigint): bigint | undefined {
  const top96 = n >> 32n;
  const low32 = n & 0xffffffffn;
  if (top96 === 0xffffn || top96 === 0xffff0000n || top96 === NAT64_TOP96) return low32;
  // `::` and `::1` are themselves, not IPv4 0.0.0.0 and 0.0.0.1.
  if (top96 === 0n && n > 1n) return low32;
  if (n >> 112n === 0x2002n) return (n >> 80n) & 0xffffffffn;
  return undefined;
}

const fromV4 = (n: bigint): string => [24n, 16n, 8n, 0n].map((s) => String((n >> s) & 0xffn)).join('.');

/**
 * Why a webhook may not connect to `address` (an IP literal as Node's URL or dns.lookup gives it),
 * or undefined for a public address. Anything not an IP literal is refused, so a caller that forgot
 * to resolve fails closed. IPv6 outside 2000::/3 (global unicast) is refused as reserved.
 */
export function blockedAddress(address: string): AddressVerdict | undefined {
  if (isIPv4(address)) {
    const n = v4(address);
    const range = V4_RANGES.find((r) => inRange(n, 32, r));
    return range ? { reason: range[2], private: range[3] } : undefined;
  }
  if (!isIPv6(address)) return { reason: 'not an IP address', private: false };
  const n = v6(address);
  const inner = embeddedV4(n);
  if (inner !== undefined) {
    const verdict = blockedAddress(fromV4(inner));
    return verdict && { ...verdict, reason: `${verdict.reason} (IPv4 ${fromV4(inner)} inside IPv6)` };
  }
  const range = V6_RANGES.find((r) => inRange(n, 128, r));
  if (range) return { reason: range[2], private: range[3] };
  if (n >> 125n !== 1n) return { reason: 'reserved (not global unicast)', private: false };
  return undefined;
}
