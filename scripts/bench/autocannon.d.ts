// autocannon ships no types; only what the benches use.
declare module 'autocannon' {
  interface Options { url: string; connections?: number; duration?: number; pipelining?: number; overallRate?: number }
  interface Histogram { average: number; p99: number }
  interface Result { requests: Histogram; latency: Histogram; errors: number; non2xx: number }
  function autocannon(opts: Options): Promise<Result>;
  export default autocannon;
}
