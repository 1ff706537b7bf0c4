/** Types of scripts/node-versions.mjs (plain JS: scripts/test.mjs runs before any TypeScript loader). */
export declare const NODE_VERSIONS: Readonly<Record<string, string>>;
/** Caches kept between clones (SHADOWGATE_CACHE, else ~/.cache/shadowgate). */
export declare const CACHE: string;
export declare const NODE_CACHE: string;
/** The unpacked official release of one major (installed from npm when missing), with bin/node and include/node. */
export declare function nodeDir(major: string | number): string;
