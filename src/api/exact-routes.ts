/**
 * Dispatch by exact path, ahead of polka. polka's router tests every registered route's pattern in turn
 * (about 60 here), joins the matches' handlers into a new array and runs them through two closures and a
 * promise per request. A route registered through the kit with a literal path (no `:param`, no wildcard)
 * is found here with one map lookup instead, and the request gets the fields polka's handler would set.
 *
 * polka runs the matching routes in the order they were added, and a kit route always answers (it never
 * calls `next`), so what runs for its path is decided by the routes added before it: a kit route goes in
 * the table only when none of those matches its method and path (a middleware, another handler). Routes
 * added later never run for that path, here or in polka.
 */
import type { ServerResponse } from 'node:http';
import type { ApiApp, ApiRequest } from './context.js';
import { polkaRoutes } from './polka-routes.js';

type Handle = (req: ApiRequest, res: ServerResponse) => Promise<void>;

/** `/a/b` but not `/a/:id`, `/a/*` or `/a/b?`: regexparam gives those a pattern of their own. */
const isLiteral = (path: string): boolean => /^\/[^:*?]*$/.test(path);

export interface ExactRoutes {
  /** Offers a kit route before it is added to polka; kept when no route already there matches it. */
  add(method: string, path: string, handle: Handle): void;
  /**
   * Answers the request when its method and path are an exact route: sets `path`, `url`, `originalUrl`,
   * `query`, `search` and `params` as polka does and runs the route; its failure goes to `onError` as
   * polka sends it, from a promise's rejection: after the request has been read to its end, so a failure
   * thrown at once (a 401) keeps the connection open as it does through polka. Returns false (nothing done
   * but parsing the URL, which polka reuses) otherwise.
   */
  dispatch(req: ApiRequest, res: ServerResponse, onError: (err: unknown, req: ApiRequest, res: ServerResponse) => void): boolean;
}

export function exactRoutes(app: ApiApp): ExactRoutes {
  const table = new Map<string, Map<string, Handle>>();
  return {
    add(method, path, handle) {
      // trouter's matching: the route's method or '' (any), and GET routes for HEAD.
      const earlier = polkaRoutes(app).some((r) => (r.method === method || r.method === '' || (method === 'HEAD' && r.method === 'GET')) && r.pattern.test(path));
      if (!isLiteral(path) || earlier) return;
      let paths = table.get(method);
      if (!paths) table.set(method, (paths = new Map()));
      if (!paths.has(path)) paths.set(path, handle);
    },
    dispatch(req, res, onError) {
      const info = app.parse(req);
      const handle = info && table.get(req.method)?.get(info.pathname);
      if (handle === undefined) return false;
      // What polka's handler sets (a literal path has no params to decode).
      const path = info.pathname;
      req.path = path;
      req.url = path + info.search;
      req.originalUrl = req.originalUrl || req.url;
      req.query = (info.query || {}) as ApiRequest['query'];
      req.search = info.search;
      req.params = {};
      handle(req, res).catch((err: unknown) => onError(err, req, res));
      return true;
    },
  };
}
