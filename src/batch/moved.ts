/** A value whose buffers are moved, not copied, when it crosses to another thread (Piscina's transferable protocol). */
import { transferableSymbol, valueSymbol } from "piscina";

export class Moved<T extends object> {
  constructor(
    private readonly value: T,
    private readonly buffers: ArrayBuffer[],
  ) {}
  get [transferableSymbol](): ArrayBuffer[] {
    return this.buffers;
  }
  get [valueSymbol](): T {
    return this.value;
  }
}
