// A demo plugin in plain JavaScript (CommonJS). Offline and deterministic: the "forecast" is
// derived from the city name, so demos and tests give the same answer every time.
// Tools seen by the model: `Weather-get_forecast`, `Weather-whoami`.

const SKIES = ['sunny', 'cloudy', 'rainy', 'windy', 'snowy'];

function forecastFor(city, days) {
  let h = 0;
  for (const ch of city.toLowerCase()) h = (h * 31 + ch.charCodeAt(0)) >>> 0;
  return Array.from({ length: days }, (_, i) => ({
    day: i + 1,
    sky: SKIES[(h + i) % SKIES.length],
    high_c: 5 + ((h >> (i + 1)) % 20),
  }));
}

/** @type {import('../../src/tools/plugins/plugin.types').PluginDefinition[]} */
exports.plugins = [
  {
    name: 'Weather',
    description: 'Offline demo weather',
    tools: [
      {
        name: 'get_forecast',
        description: 'Forecast for a city, for 1 to 5 days',
        parameters: {
          type: 'object',
          properties: {
            city: { type: 'string', minLength: 1 },
            days: { type: 'integer', minimum: 1, maximum: 5, default: 1 },
          },
          required: ['city'],
          additionalProperties: false,
        },
        risk: 'read_only',
        handler: ({ city, days }) => ({ city, forecast: forecastFor(city, days ?? 1) }),
      },
      {
        name: 'whoami',
        description: 'The calling user, as the server authenticated them',
        risk: 'read_only',
        handler: (_args, ctx) => `tenant ${ctx.principal.tenantId}, user ${ctx.principal.ownerId}`,
      },
    ],
  },
];
