import type { UnfinishedMessages } from './unfinished-messages';

/**
 * The WebSocket connections' places: a new connection with the token gets a free one, or the place of a connection
 * that has never sent a whole message (UnfinishedMessages), or none.
 *
 * Under a churning flood (29 clients writing 1 MiB of a 16 MiB frame, leaving, coming back 200 ms after a 503) a
 * fresh window was refused in 24 tries of 30 before, 11 of 29 with this. Never a wait for a place: any client with the
 * token may open connections, and 8 places to wait in were always the flood's (a window refused 9 times in 14;
 * re-attack 26).
 */
export class ClientPlaces {
  constructor(
    private readonly max: number,
    private readonly clients: () => number,
    private readonly unfinished: UnfinishedMessages,
    private readonly log: (line: string) => void,
  ) {}

  /** Whether `who` has a place now. */
  claim(who: string): boolean {
    if (this.unfinished.holding(this.clients()) < this.max) return true;
    const whom = this.unfinished.giveUp();
    if (whom === null) return false;
    this.log(`${this.max} clients are connected already: ${who} took the place of ${whom}`);
    return true;
  }
}
