// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* ntbpf - where every microsecond of an NVMe/TCP I/O goes. */
#include <stdio.h>
#include "bpfrec.h"
#include "cli.h"
#include "liverun.h"
#include "probecmd.h"
#include "report.h"
#include "script.h"

int main(int argc, char **argv)
{
	struct nt_config cfg;
	int rc = nt_cli_parse(argc, argv, &cfg, stderr);

	if (rc) {
		nt_config_free(&cfg);
		return rc < 0 ? 2 : 0;
	}
	switch (cfg.cmd) {
	case NT_CMD_RECORD:
		return nt_record_run(&cfg, argc, argv);
	case NT_CMD_REPORT:
		rc = nt_report_cmd(&cfg, stdout, stderr);
		nt_config_free(&cfg);
		return rc;
	case NT_CMD_SCRIPT:
		rc = nt_script_cmd(&cfg, stdout, stderr);
		nt_config_free(&cfg);
		return rc;
	case NT_CMD_LIVE:
		return nt_live_run(&cfg, argc, argv);
	case NT_CMD_PROBE:
		return nt_probe_print(stdout, stderr, cfg.force_kprobe, cfg.probe_facts, !cfg.probe_no_verify) ? 1 : 0;
	default:
		return 2;
	}
}
