/** Archive entry keys a store remembers from its listings (least recently listed first out): about 150 bytes each. */
const LISTED_KEYS = 10_000;

/**
 * The sort keys of the archive entries this store last listed, by task (`taskPk`), so that
 * `markArchived` deletes them without reading their headers first. Only a hint: each delete is
 * conditioned on the entry's version, so a key that a later commit has replaced deletes nothing.
 */
export class ListedArchiveKeys {
  private readonly keys = new Map<string, string>();

  remember(pk: string, sk: string): void {
    this.keys.delete(pk);
    this.keys.set(pk, sk);
    if (this.keys.size > LISTED_KEYS) this.keys.delete(this.keys.keys().next().value!);
  }

  get(pk: string): string | undefined {
    return this.keys.get(pk);
  }

  forget(pk: string): void {
    this.keys.delete(pk);
  }
}
