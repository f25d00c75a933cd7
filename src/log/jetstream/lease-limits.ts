/**
 * The writer lease's limits, apart from the lease itself (writer-lease.ts) so
 * that checking `--lease-ttl` does not load the NATS client: a broker on the
 * file log never loads it.
 */

export const leaseTtlMsDefault = 5_000;
/** JetStream's max age has a floor; below a second, clock and timer jitter would eat the lease. */
export const leaseTtlMsMin = 1_000;
