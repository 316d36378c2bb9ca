import { blockedAddress } from './blocked-address.util';
import { LookupAll, resolveWebhookAddress, WebhookAddressRefused } from './webhook-address.resolver';

const answers =
  (table: Record<string, string[]>): LookupAll =>
  async (host) => {
    const found = table[host];
    if (!found) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
    return found.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };

const refusal = async (url: string, lookup?: LookupAll, allowPrivate = false) => {
  try {
    await resolveWebhookAddress(url, { allowPrivate, lookup });
  } catch (e) {
    if (e instanceof WebhookAddressRefused) return e.message;
    throw e;
  }
  return undefined;
};

describe('blockedAddress', () => {
  it.each([
    ['127.0.0.1', 'loopback', true],
    ['127.255.255.254', 'loopback', true],
    ['0.0.0.0', 'unspecified', false],
    ['0.1.2.3', 'unspecified', false],
    ['10.1.2.3', 'private', true],
    ['172.16.0.1', 'private', true],
    ['172.31.255.255', 'private', true],
    ['192.168.1.1', 'private', true],
    ['100.64.0.1', 'shared address space (CGNAT)', true],
    ['100.127.255.255', 'shared address space (CGNAT)', true],
    ['169.254.169.254', 'link-local (cloud metadata)', false],
    ['169.254.0.1', 'link-local (cloud metadata)', false],
    ['168.63.129.16', 'cloud metadata (Azure WireServer)', false],
    ['100.100.100.200', 'cloud metadata (Alibaba Cloud)', false],
    ['224.0.0.1', 'multicast', false],
    ['239.255.255.250', 'multicast', false],
    ['240.0.0.1', 'reserved (including broadcast)', false],
    ['255.255.255.255', 'reserved (including broadcast)', false],
    ['192.0.2.10', 'reserved (documentation)', false],
    ['198.18.0.1', 'reserved (benchmarking)', false],
    ['::', 'unspecified', false],
    ['::1', 'loopback', true],
    ['fc00::1', 'private (unique local)', true],
    ['fd12:3456::1', 'private (unique local)', true],
    ['fd00:ec2::254', 'cloud metadata', false],
    ['fe80::1', 'link-local', false],
    ['fe80::1%eth0', 'link-local', false],
    ['febf::1', 'link-local', false],
    ['ff02::1', 'multicast', false],
    ['2001:db8::1', 'reserved (documentation)', false],
    ['::ffff:127.0.0.1', 'loopback (IPv4 127.0.0.1 inside IPv6)', true],
    ['::ffff:7f00:1', 'loopback (IPv4 127.0.0.1 inside IPv6)', true],
    ['::ffff:a9fe:a9fe', 'link-local (cloud metadata) (IPv4 169.254.169.254 inside IPv6)', false],
    ['::ffff:0:10.0.0.1', 'private (IPv4 10.0.0.1 inside IPv6)', true],
    ['::127.0.0.1', 'loopback (IPv4 127.0.0.1 inside IPv6)', true],
    ['64:ff9b::10.0.0.1', 'private (IPv4 10.0.0.1 inside IPv6)', true],
    ['64:ff9b::a9fe:a9fe', 'link-local (cloud metadata) (IPv4 169.254.169.254 inside IPv6)', false],
    ['2002:7f00:1::', 'loopback (IPv4 127.0.0.1 inside IPv6)', true],
    ['64:ff9b:1::1', 'reserved (local-use NAT64)', true],
    ['4000::1', 'reserved (not global unicast)', false],
    ['not-an-ip', 'not an IP address', false],
  ])('refuses %s: %s', (address, reason, isPrivate) => {
    expect(blockedAddress(address)).toEqual({ reason, private: isPrivate });
  });

  it.each(['93.184.215.14', '8.8.8.8', '172.32.0.1', '100.128.0.1', '169.255.0.1', '2606:4700::1111', '64:ff9b::808:808', '::ffff:8.8.8.8', '2002:808:808::1'])(
    'lets the public address %s through',
    (address) => {
      expect(blockedAddress(address)).toBeUndefined();
    },
  );
});

describe('resolveWebhookAddress (the SSRF guard)', () => {
  it('returns the address to connect to, checked, for a public host', async () => {
    const found = await resolveWebhookAddress('https://hooks.example.com/x', {
      allowPrivate: false,
      lookup: answers({ 'hooks.example.com': ['93.184.215.14'] }),
    });
    expect(found).toMatchObject({ address: '93.184.215.14', family: 4 });
    expect(found.url.hostname).toBe('hooks.example.com');
  });

  it.each([
    ['http://127.0.0.1/', '127.0.0.1 is refused: loopback; TA_WEBHOOK_ALLOW_PRIVATE=true allows it'],
    ['http://169.254.169.254/latest/meta-data/', '169.254.169.254 is refused: link-local (cloud metadata)'],
    ['http://2130706433/', '127.0.0.1 is refused: loopback; TA_WEBHOOK_ALLOW_PRIVATE=true allows it'],
    ['http://0x7f.1/', '127.0.0.1 is refused: loopback; TA_WEBHOOK_ALLOW_PRIVATE=true allows it'],
    ['http://0177.0.0.1/', '127.0.0.1 is refused: loopback; TA_WEBHOOK_ALLOW_PRIVATE=true allows it'],
    ['http://0/', '0.0.0.0 is refused: unspecified'],
    ['http://[::1]:8080/', '::1 is refused: loopback; TA_WEBHOOK_ALLOW_PRIVATE=true allows it'],
    ['http://[::ffff:127.0.0.1]/', '::ffff:7f00:1 is refused: loopback (IPv4 127.0.0.1 inside IPv6); TA_WEBHOOK_ALLOW_PRIVATE=true allows it'],
    ['http://[::ffff:a9fe:a9fe]/', '::ffff:a9fe:a9fe is refused: link-local (cloud metadata) (IPv4 169.254.169.254 inside IPv6)'],
    ['http://[64:ff9b::c0a8:1]/', '64:ff9b::c0a8:1 is refused: private (IPv4 192.168.0.1 inside IPv6); TA_WEBHOOK_ALLOW_PRIVATE=true allows it'],
    ['ftp://hooks.example.com/', 'not an http(s) URL: ftp:'],
    ['/relative', 'not an absolute URL'],
  ])('refuses %s', async (url, message) => {
    expect(await refusal(url)).toBe(message);
  });

  it('refuses a name that resolves to a blocked address, naming both', async () => {
    expect(await refusal('http://localhost:9/', answers({ localhost: ['::1', '127.0.0.1'] }))).toBe(
      'localhost (::1) is refused: loopback; TA_WEBHOOK_ALLOW_PRIVATE=true allows it',
    );
    expect(await refusal('https://metadata.evil.io/', answers({ 'metadata.evil.io': ['169.254.169.254'] }))).toBe(
      'metadata.evil.io (169.254.169.254) is refused: link-local (cloud metadata)',
    );
  });

  it('refuses a name when any one of its addresses is blocked (a mixed answer would reach it on some attempts)', async () => {
    expect(await refusal('https://mixed.evil.io/', answers({ 'mixed.evil.io': ['93.184.215.14', '10.0.0.5'] }))).toBe(
      'mixed.evil.io (10.0.0.5) is refused: private; TA_WEBHOOK_ALLOW_PRIVATE=true allows it',
    );
  });

  it('refuses a name that does not resolve', async () => {
    expect(await refusal('https://nowhere.invalid/', answers({}))).toBe('nowhere.invalid does not resolve (ENOTFOUND)');
    expect(await refusal('https://empty.example/', async () => [])).toBe('empty.example does not resolve');
  });

  it('with allowPrivate, lets loopback and private through but never link-local, metadata, unspecified or multicast', async () => {
    const lookup = answers({ localhost: ['127.0.0.1'] });
    await expect(resolveWebhookAddress('http://localhost:8080/', { allowPrivate: true, lookup })).resolves.toMatchObject({ address: '127.0.0.1', family: 4 });
    await expect(resolveWebhookAddress('http://10.0.0.1/', { allowPrivate: true })).resolves.toMatchObject({ address: '10.0.0.1' });
    await expect(resolveWebhookAddress('http://[::1]/', { allowPrivate: true })).resolves.toMatchObject({ address: '::1', family: 6 });
    for (const url of ['http://169.254.169.254/', 'http://[fd00:ec2::254]/', 'http://100.100.100.200/', 'http://0.0.0.0/', 'http://224.0.0.1/']) {
      expect(await refusal(url, undefined, true)).toMatch(/is refused: (link-local|cloud metadata|unspecified|multicast)/);
    }
  });

  it('uses the system resolver by default (localhost is loopback)', async () => {
    expect(await refusal('http://localhost/')).toMatch(/^localhost \((127\.0\.0\.1|::1)\) is refused: loopback/);
  });
});
