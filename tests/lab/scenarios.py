# The lab scenarios run by tests/lab/test, and what is asserted on each one.
# A scenario: name, the arguments for tests/lab/run, and its checks: (check name, parameters).
# Checks live in check.py (CHECKS); add a check there, then list it here.  Checks marked
# {"pending": "..."} are printed as SKIP until ntbpf produces the data they need: drop the
# marker when the stage lands and they become real assertions.
QD1 = "rw=randread bs=4k iodepth=1 numjobs=1 runtime=4"

# Checks every QD1 scenario gets.
BASIC = [
    ("fio_ok", {}),
    # every I/O fio completed is one initiator record for the device; ntbpf record wraps
    # fio's whole life, so nothing fio does can fall outside the window: slack 0
    ("initiator_count_equals_fio", {"slack": 0}),
    # block-layer end_to_end vs fio's lat (submit -> reaped) of the same I/Os at QD1:
    # e2e <= lat per I/O, so for the mean and every percentile (+5 % for fio's percentile
    # buckets).  The floor is loose on purpose: under TCG the syscall and wake-up overhead
    # outside the block layer is large (measured e2e/lat: 0.46 at p50, 0.58 avg, 0.59 p99).
    ("end_to_end_within_fio_lat", {"stat": "avg", "low": 0.3, "high": 1.0}),
    ("end_to_end_within_fio_lat", {"stat": 50, "low": 0.2, "high": 1.05}),
    ("end_to_end_within_fio_lat", {"stat": 99, "low": 0.2, "high": 1.05}),
    ("no_lost_records", {}),
    ("matched_fraction", {"min": 0.99, "pending": "host/target matching not implemented yet"}),
    ("target_records", {"pending": "nvmet hooks not implemented yet"}),
]

SCENARIOS = [
    {"name": "one-6.12-randread-qd1",
     "args": ["--topology", "one", "--kernel", "6.12", "--fio", QD1], "checks": BASIC},
    {"name": "two-6.12-randread-qd1",
     "args": ["--topology", "two", "--kernel", "6.12", "--fio", QD1], "checks": BASIC},
    {"name": "one-6.1-randread-qd1",
     "args": ["--topology", "one", "--kernel", "6.1", "--fio", QD1], "checks": BASIC},
    {"name": "two-6.1-randread-qd1",
     "args": ["--topology", "two", "--kernel", "6.1", "--fio", QD1], "checks": BASIC},
    # mixed kernels, reads and writes, 2 queues, QD4: counts only (latencies at QD>1 differ)
    {"name": "two-t6.1-i6.12-randrw-qd4-q2",
     "args": ["--topology", "two", "--target-kernel", "6.1", "--initiator-kernel", "6.12",
              "--queues", "2", "--fio", "rw=randrw bs=4k iodepth=4 numjobs=1 runtime=4"],
     "checks": [("fio_ok", {}), ("initiator_count_equals_fio", {"slack": 0}),
                ("ops_present", {"ops": ["read", "write"]}), ("no_lost_records", {})]},
    # injected ground truth: a 2 ms slow namespace (null_blk completion_nsec, irqmode=2)
    {"name": "one-6.12-device-delay-2ms",
     "args": ["--topology", "one", "--kernel", "6.12", "--device-delay", "2ms", "--fio", QD1],
     "checks": BASIC + [
         ("stage_at_least", {"stage": "end_to_end", "percentile": 50, "us": 2000}),
         ("stage_at_least", {"stage": "target_subsystem", "percentile": 50, "us": 1800,
                             "pending": "nvmet stages not implemented yet"})]},
    # injected ground truth: 2 ms netem on the initiator's link (each command waits 2 ms)
    {"name": "two-6.12-netem-2ms",
     "args": ["--topology", "two", "--kernel", "6.12", "--netem-delay", "2ms", "--fio", QD1],
     "checks": BASIC + [
         ("stage_at_least", {"stage": "end_to_end", "percentile": 50, "us": 2000}),
         ("stage_at_least", {"stage": "network_transmission", "percentile": 50, "us": 1800,
                             "pending": "network_transmission not implemented yet"})]},
]
