/**
 * GET /api/v1/servers/{id}/capture: what the consumers of a server's persona units asked and got (units
 * with `capture`), oldest first; `?unit=N` narrows to one unit. DELETE clears it, to start a fresh session.
 */
import type { ApiApp, RouteKit } from '../../api/context.js';
import { HttpError } from '../../api/envelope.js';
import type { PersonaUnit } from './unit.js';
import type { CaptureEntry } from './capture.js';

export function mountCaptureRoutes(_app: ApiApp, kit: RouteKit, units: (serverId: string) => readonly PersonaUnit[]): void {
  const captured = (id: string, unitText: unknown): PersonaUnit[] => {
    const all = units(id).filter((u) => u.capture);
    if (all.length === 0) throw new HttpError(404, `server "${id}" has no persona unit with capture on`);
    if (unitText === undefined) return all;
    const unit = Number(unitText);
    const one = all.filter((u) => u.unit === unit);
    if (one.length === 0) throw new HttpError(404, `server "${id}" has no persona unit ${String(unitText)} with capture on`);
    return one;
  };
  kit.route('GET', '/servers/:id/capture', 'read', (req) => {
    const list: CaptureEntry[] = captured(String(req.params.id), req.query.unit).flatMap((u) => u.capture!.list());
    return list.sort((a, b) => a.time - b.time);
  });
  kit.route('DELETE', '/servers/:id/capture', 'write', (req) => {
    for (const u of captured(String(req.params.id), req.query.unit)) u.capture!.clear();
    return null;
  });
}
