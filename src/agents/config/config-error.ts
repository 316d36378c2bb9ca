/** Every problem found in the agent configs at once; the boot stops before listening. */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid agent configuration (${problems.length} problem${problems.length === 1 ? '' : 's'}):\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}
