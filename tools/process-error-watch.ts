/**
 * Records every uncaught exception and unhandled rejection of this process
 * while it watches: a broker running in-process that throws out of a socket
 * callback (an assertion on a client's bytes) shows up here instead of only
 * in the test runner's summary, so a test can say which case did it.
 */
export class ProcessErrorWatch {
  readonly errors: unknown[] = [];
  private readonly record = (error: unknown): void => {
    this.errors.push(error);
  };

  static start(): ProcessErrorWatch {
    const watch = new ProcessErrorWatch();
    process.on('uncaughtException', watch.record);
    process.on('unhandledRejection', watch.record);
    return watch;
  }

  stop(): void {
    process.off('uncaughtException', this.record);
    process.off('unhandledRejection', this.record);
  }

  /** The recorded errors, one line each, for an assertion message. */
  describe(): string {
    return this.errors.map((error) => (error instanceof Error ? `${error.name}: ${error.message}` : String(error))).join('\n');
  }
}
