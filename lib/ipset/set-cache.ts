/**
 * SetCache: what one client knows of each set, learnt from headers and kept up to date by its own operations. The
 * shape saves a header request per checked entry; the size decides whether a small request may go inline.
 */
import type { SetShape } from './entry.js';
import { shapeOf } from './header.js';
import type { IpsetHeader } from './types.js';

export class SetCache {
  readonly #shapes = new Map<string, SetShape>();
  /** Entries per set, as far as this client knows: from headers, then its own adds and dels. */
  readonly #sizes = new Map<string, number>();

  /** shape is the known shape of a set, or undefined. */
  shape(name: string): SetShape | undefined {
    return this.#shapes.get(name);
  }

  /** size is the known size of a set, or undefined. */
  size(name: string): number | undefined {
    return this.#sizes.get(name);
  }

  /** remember learns a set from its header (only sets whose entries podnet decodes) and returns its shape. */
  remember(header: IpsetHeader): SetShape {
    const shape = shapeOf(header);
    if (header.decoded) {
      this.#shapes.set(header.name, shape);
      this.#sizes.set(header.name, header.elements);
    }
    return shape;
  }

  /** created learns a set this client made; with `exist` it may have been there, full, so its size stays unknown. */
  created(name: string, shape: SetShape, exist: boolean): void {
    this.#shapes.set(name, shape);
    if (exist) this.#sizes.delete(name);
    else this.#sizes.set(name, 0);
  }

  /** forget drops what the client knew of a set (all sets when name is undefined). */
  forget(name?: string): void {
    if (name === undefined) {
      this.#shapes.clear();
      this.#sizes.clear();
    } else {
      this.#shapes.delete(name);
      this.#sizes.delete(name);
    }
  }

  /** flushed records that a set (every set when name is undefined) is now empty. */
  flushed(name?: string): void {
    for (const set of name === undefined ? [...this.#sizes.keys()] : [name]) if (this.#sizes.has(set)) this.#sizes.set(set, 0);
  }

  /** counted adds what an ADD applied to the set's known size (adding is false for a DEL: fewer entries). */
  counted(name: string, adding: boolean, applied: number): void {
    const known = this.#sizes.get(name);
    if (known !== undefined) this.#sizes.set(name, Math.max(0, known + (adding ? applied : -applied)));
  }
}
