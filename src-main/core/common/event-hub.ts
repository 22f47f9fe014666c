import type { EventData, EventName } from '../../api/events';

export type EventListener = <E extends EventName>(event: E, data: EventData<E>) => void;

/** Fan-out of contract events to every connected client (windows, sockets). */
export class EventHub {
  private readonly listeners = new Set<EventListener>();

  subscribe(listener: EventListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  emit<E extends EventName>(event: E, data: EventData<E>): void {
    for (const listener of this.listeners) listener(event, data);
  }
}
