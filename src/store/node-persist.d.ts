/**
 * Minimal own types for node-persist 4.0.4 (no types ship; @types/node-persist@3 lacks
 * maxFileDescriptors and types getDatum as sync). Only what the shadow store and the config versions use.
 */
declare module 'node-persist' {
  export interface InitOptions {
    dir?: string;
    ttl?: number | false;
    expiredInterval?: number;
    forgiveParseErrors?: boolean;
    writeQueue?: boolean;
    writeQueueIntervalMs?: number;
    writeQueueWriteOnlyLast?: boolean;
    maxFileDescriptors?: number;
    logging?: boolean | ((...args: unknown[]) => void);
  }

  export interface Datum {
    key: string;
    value: unknown;
    ttl?: number;
  }

  export interface LocalStorage {
    init(options?: InitOptions): Promise<InitOptions>;
    getItem(key: string): Promise<unknown>;
    setItem(key: string, value: unknown, options?: { ttl?: number }): Promise<unknown>;
    removeItem(key: string): Promise<unknown>;
    keys(): Promise<string[]>;
    getDatumPath(key: string): string;
    /** Instance hook: every write goes through here, so it can be replaced by an atomic writer. */
    writeFile(file: string, content: Datum): Promise<unknown>;
    stopWriteQueueInterval(): void;
    stopExpiredKeysInterval(): void;
  }

  const nodePersist: {
    create(options?: InitOptions): LocalStorage;
  };
  export default nodePersist;
}
