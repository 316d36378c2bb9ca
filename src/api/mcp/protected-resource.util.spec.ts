import { loadEnvConfig } from '../../config/env.config';
import { protectedResourceMetadata, protectedResourceMetadataUrl, publicOrigin } from './protected-resource.util';

const T1 = 'c0ffee00-0000-4000-8000-0000000000a1';
const T2 = 'c0ffee00-0000-4000-8000-0000000000a2';

const entra = (vars: Record<string, string>) =>
  loadEnvConfig({ TA_AUTH_MODE: 'entra', TA_ENTRA_AUTHORITY: 'https://login.example.com', TA_ENTRA_AUDIENCE: 'api://agents', ...vars }).auth;

describe('protected-resource metadata (RFC 9728)', () => {
  it('names the tenant as authorization server and the scopes under the App ID URI', () => {
    const auth = entra({ TA_ENTRA_TENANT_ID: T1, TA_ENTRA_REQUIRED_SCOPES: 'agents.invoke' });
    expect(protectedResourceMetadata('https://h/A/1/mcp', auth, 'A 1 (MCP)')).toEqual({
      resource: 'https://h/A/1/mcp',
      authorization_servers: [`https://login.example.com/${T1}/v2.0`],
      scopes_supported: ['api://agents/agents.invoke'],
      bearer_methods_supported: ['header'],
      resource_name: 'A 1 (MCP)',
    });
  });

  it('a multi-tenant app names organizations; app roles alone ask for .default', () => {
    const auth = entra({ TA_ENTRA_ALLOWED_TENANTS: `${T1},${T2}`, TA_ENTRA_REQUIRED_ROLES: 'Agents.Invoke' });
    expect(protectedResourceMetadata('https://h/', auth)).toMatchObject({
      authorization_servers: ['https://login.example.com/organizations/v2.0'],
      scopes_supported: ['api://agents/.default'],
    });
  });

  it('the metadata URL inserts the well-known path before the resource path', () => {
    expect(protectedResourceMetadataUrl('https://h', '/A/0.1/mcp')).toBe('https://h/.well-known/oauth-protected-resource/A/0.1/mcp');
    expect(protectedResourceMetadataUrl('https://h', '/')).toBe('https://h/.well-known/oauth-protected-resource');
  });

  it("the origin is the request's, or what a proxy forwards", () => {
    const req = (headers: Record<string, string>) => ({ protocol: 'http', header: (n: string) => headers[n] });
    expect(publicOrigin(req({ host: '10.0.0.5:8000' }))).toBe('http://10.0.0.5:8000');
    expect(publicOrigin(req({ host: '10.0.0.5:8000', 'x-forwarded-proto': 'https, http', 'x-forwarded-host': 'agents.example.com' }))).toBe(
      'https://agents.example.com',
    );
  });
});
