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
  /**
   * The set last looked up, and its shape: a loop of single adds asks for one set each time, and the Map lookup
   * (a hash of the name and a builtin's code) is part of every add. Any change to the shapes drops it.
   */
  #lastName: string | undefined;
  #lastShape: SetShape | undefined;

  /** shape is the known shape of a set, or undefined. */
  shape(name: string): SetShape | undefined {
    if (name === this.#lastName) return this.#lastShape;
    const shape = this.#shapes.get(name);
    if (shape) {
      this.#lastName = name;
      this.#lastShape = shape;
    }
    return shape;
  }

  #shapesChanged(): void {
    this.#lastName = undefined;
    this.#lastShape = undefined;
  }

  /** size is the known size of a set, or undefined. */
  size(name: string): number | undefined {
    return this.#sizes.get(name);
  }

  /** remember learns a set from its header (only sets whose entries podnet decodes) and returns its shape. */
  remember(header: IpsetHeader): SetShape {
    const shape = shapeOf(header);
    this.#shapesChanged();
    if (header.decoded) {
      this.#shapes.set(header.name, shape);
      this.#sizes.set(header.name, header.elements);
    }
    return shape;
  }

  /** created learns a set this client made; with `exist` it may have been there, full, so its size stays unknown. */
  created(name: string, shape: SetShape, exist: boolean): void {
    this.#shapesChanged();
    this.#shapes.set(name, shape);
    if (exist) this.#sizes.delete(name);
    else this.#sizes.set(name, 0);
  }

  /** forget drops what the client knew of a set (all sets when name is undefined). */
  forget(name?: string): void {
    this.#shapesChanged();
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
