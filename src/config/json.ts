/** A JSON parse error as a message with line and column (V8 reports only a character position). */
export function describeJsonError(text: string, error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const match = /position (\d+)/.exec(message);
  if (!match) return `not valid JSON: ${message}`;
  const position = Number(match[1]);
  const before = text.slice(0, position).split('\n');
  const line = before.length;
  const column = before[before.length - 1]!.length + 1;
  return `not valid JSON at line ${line}, column ${column}: ${message}`;
}
