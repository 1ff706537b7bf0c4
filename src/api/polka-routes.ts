/**
 * polka's list of routes, read where polka has no public API for it: the 404/405 decision, the route table of
 * the auth tests and the exact-path dispatch all read it here. Not part of polka's typings; the canary in
 * test/deploy/library-internals.test.ts fails on an upgrade that moves it.
 */
import type { ApiApp } from './context.js';

/** One route as polka (trouter) holds it: method ('' for any), regexparam's pattern, its handlers. */
export interface PolkaRoute {
  method: string;
  pattern: RegExp;
  handlers: ((...args: never[]) => unknown)[];
}

export const polkaRoutes = (app: ApiApp): readonly PolkaRoute[] => (app as unknown as { routes: PolkaRoute[] }).routes;
