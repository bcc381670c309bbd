// Log lines in the format of /work/brief/testengine-format.md (docs/test-engine.md):
// "<RFC 3339 UTC time with ms> <LEVEL> <event> key=value ...", one event per line on stderr.
// A value that is empty or holds a space, a quote, "=" or a control character is written as a
// JSON string (double quotes, backslash escapes); every other value is written bare.

const bare = /^[^\s"=\\]+$/;

function formatValue(v) {
  const s = String(v);
  return bare.test(s) ? s : JSON.stringify(s);
}

/** formatLine builds one log line (without the newline). fields is a list of [key, value]. */
export function formatLine(time, level, event, fields) {
  let line = `${time.toISOString()} ${level} ${event}`;
  for (const [k, v] of fields) line += ` ${k}=${formatValue(v)}`;
  return line;
}

/** Logger writes log lines to a stream (stderr by default). */
export class Logger {
  constructor(stream = process.stderr) {
    this.stream = stream;
  }
  info(event, fields = []) {
    this.stream.write(formatLine(new Date(), "INFO", event, fields) + "\n");
  }
  warn(event, fields = []) {
    this.stream.write(formatLine(new Date(), "WARN", event, fields) + "\n");
  }
  error(event, fields = []) {
    this.stream.write(formatLine(new Date(), "ERROR", event, fields) + "\n");
  }
}

/** ms formats a duration in milliseconds with one decimal, as the contract's ttft_ms/e2e_ms. */
export function ms(v) {
  return v.toFixed(1);
}
