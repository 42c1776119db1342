# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# make            build .output/ntbpf (BPF objects embedded as skeletons)
# make static     .output/ntbpf-static: the same, linked without any shared library (make install, make deb)
# make check      unit tests (cmocka, no root, a minute) and the docs against --help (tests/docs/check_docs.py)
# make test       deps + build + unit + root integration tests + lab tests
# make demo       boot the NVMe/TCP lab and print a real two-host breakdown
# make demo-exact one guest on QEMU's instruction clock: deterministic microseconds
# make bench      benchmarks
# make install    binary, man pages, bash completion (PREFIX=/usr/local DESTDIR=)
# make deb        .output/ntbpf_VERSION_ARCH.deb (dpkg-deb)
# make print-version  the version this tree builds as, and its Debian form
# make fuzz       libFuzzer over the record file reader (FUZZ_SECONDS=N, default 60; FUZZ_TARGET=report|http|facts|stream)
# make fuzz-ci    each fuzz target FUZZ_CI_SECONDS (default 30) under ASan and UBSan (make test runs it)
# make deps       install every Debian package needed (root)
# make ARCH=arm64 static  cross-build .output/arm64/ntbpf-static for aarch64 (make ARCH=arm64 deb: its .deb);
#                 installs its cross toolchain and :arm64 archives itself (scripts/deps-arm64, root;
#                 make deps and make test install them too)
# V=1             show the commands

# ARCH: the kernel's name of the target architecture (x86, arm64): the BPF programs' register layout
# (-D__TARGET_ARCH_*), vmlinux.h, and, when it is not this machine's, a cross build in .output/ARCH
HOST_ARCH := $(shell uname -m | sed 's/x86_64/x86/;s/aarch64/arm64/')
ARCH    := $(HOST_ARCH)
ifneq ($(ARCH),$(HOST_ARCH))
ifeq ($(ARCH),arm64)
CROSS   := arm64
CROSS_COMPILE ?= aarch64-linux-gnu-
DEB_ARCH := arm64
else
$(error ARCH=$(ARCH): only arm64 is cross-built (from x86_64))
endif
OUTPUT  ?= .output/$(ARCH)
ifneq ($(filter check test test-root test-lab test-install fuzz fuzz-ci fuzz-merge bench demo demo-exact lab-shell,$(MAKECMDGOALS)),)
$(error make ARCH=$(ARCH) cross-builds (static, deb, all, vmlinux, deps): run the tests without ARCH= (tests/integration/arm64 runs the arm64 binary under qemu-user, tests/lab/run --arch arm64 in a guest))
endif
ifeq ($(origin CC),default)
CC      := $(CROSS_COMPILE)gcc
endif
endif
OUTPUT  ?= .output
CC      ?= cc
AR      := $(if $(CROSS),$(CROSS_COMPILE))ar
NM      := $(if $(CROSS),$(CROSS_COMPILE))nm
CLANG   ?= clang
BPFTOOL ?= bpftool
# vmlinux.h of the target: vmlinux/vmlinux.h (x86_64), vmlinux/arm64/vmlinux.h
VMLINUX_DIR := vmlinux$(if $(filter arm64,$(ARCH)),/arm64)
# The release number: "git describe --tags" of a release tag (v0.4.0 -> 0.4.0,
# 3 commits later 0.4.0-3-gHASH); before any tag BASE_VERSION-dev+gHASH;
# "unknown" outside git (a tarball).  Releasing: docs/release.md.
BASE_VERSION := 0.4.0
GIT_TOP   := $(shell git rev-parse --show-toplevel 2>/dev/null)
ifeq ($(GIT_TOP),$(CURDIR))
GIT_DESC  := $(shell git describe --tags --match 'v[0-9]*' 2>/dev/null)
GIT_HASH  := $(shell git rev-parse --short=12 HEAD 2>/dev/null)
endif
VERSION   ?= $(if $(GIT_DESC),$(patsubst v%,%,$(GIT_DESC)),$(if $(GIT_HASH),$(BASE_VERSION)-dev+g$(GIT_HASH),unknown))

CFLAGS  ?= -O2 -g
CFLAGS  += -Wall -Wextra -Wno-unused-parameter -Wno-format-truncation -Werror -std=gnu11 \
	   -Iinclude -Isrc -I$(OUTPUT) -DNTBPF_VERSION='"$(VERSION)"'
# aarch64: no fused multiply-add where the C has a multiply and an add (GCC contracts them by default),
# so floating point rounds as on x86_64 and reports are byte-identical (tests/integration/arm64)
ifeq ($(ARCH),arm64)
CFLAGS  += -ffp-contract=off
endif
BPF_CFLAGS := -O2 -g -Wall -Werror -target bpf -mcpu=v3 -D__TARGET_ARCH_$(ARCH) \
	   -Iinclude -I$(VMLINUX_DIR) -Ibpf
LDLIBS  := -lbpf -lelf -lz -lcrypto

ifeq ($(V),1)
Q =
msg =
else
Q = @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

BPF_SRCS  := $(wildcard bpf/*.bpf.c)
BPF_OBJS  := $(patsubst bpf/%.bpf.c,$(OUTPUT)/%.bpf.o,$(BPF_SRCS))
SKELS     := $(patsubst bpf/%.bpf.c,$(OUTPUT)/%.skel.h,$(BPF_SRCS))

# Pure modules: no BPF, no root; unit-tested.
BPF_USER_SRCS := src/bpfrec.c src/facts.c src/probes.c src/probecmd.c src/liverun.c src/recorder.c
CORE_SRCS := $(filter-out src/main.c $(BPF_USER_SRCS),$(wildcard src/*.c))
CORE_OBJS := $(patsubst src/%.c,$(OUTPUT)/%.o,$(CORE_SRCS))
BPFU_OBJS := $(patsubst src/%.c,$(OUTPUT)/%.o,$(filter $(BPF_USER_SRCS),$(wildcard src/*.c)))
TESTS     := $(patsubst tests/unit/%.c,$(OUTPUT)/tests/%,$(wildcard tests/unit/test_*.c))

.PHONY: all static check test test-root test-lab test-install deps deps-arm64 demo demo-exact bench clean lab-shell vmlinux fuzz fuzz-merge fuzz-ci \
	man install uninstall deb print-version
.DELETE_ON_ERROR:

all: $(OUTPUT)/ntbpf

$(OUTPUT) $(OUTPUT)/tests: | $(if $(CROSS),deps-$(ARCH))
	$(Q)mkdir -p $@

$(OUTPUT)/%.bpf.o: bpf/%.bpf.c $(wildcard include/*.h) $(wildcard bpf/*.h) $(VMLINUX_DIR)/vmlinux.h | $(OUTPUT)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(OUTPUT)/%.skel.h: $(OUTPUT)/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $(subst -,_,$*)_bpf > $@

# the version is compiled in: objects are rebuilt when it changes
$(OUTPUT)/version.stamp: FORCE | $(OUTPUT)
	$(Q)[ "$$(cat $@ 2>/dev/null)" = "$(VERSION)" ] || echo "$(VERSION)" > $@

FORCE:

$(OUTPUT)/%.o: src/%.c $(wildcard src/*.h) $(wildcard include/*.h) $(OUTPUT)/version.stamp | $(OUTPUT)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -c $< -o $@

$(BPFU_OBJS) $(OUTPUT)/main.o: $(SKELS)

$(OUTPUT)/libntcore.a: $(CORE_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@; $(AR) rcs $@ $^

$(OUTPUT)/ntbpf: $(OUTPUT)/main.o $(BPFU_OBJS) $(OUTPUT)/libntcore.a
	$(call msg,LINK,$@)
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS) -lm -lpthread

# make static: the objects of .output/ntbpf linked with glibc's and Debian's static archives (libbpf.a,
# libelf.a, libz.a, libzstd.a for libelf's compressed sections, libcrypto.a) into one file that runs
# on any x86_64 Linux, with the marker object that makes it say "static" (nt_build_static).  A file
# of its own, not .output/ntbpf made static: the unit tests, the fuzzer and the dev loop keep the
# faster shared link, and one name never means two different binaries.
# glibc warns about three functions in a static link; each is understood, and any other warning
# fails the link:
#  getaddrinfo    would dlopen the NSS modules nsswitch.conf names beyond glibc's own "files" and
#                 "dns": nt_resolve (src/stream.c) sets hosts to "files dns" first
#  dlopen         OpenSSL's DSO loader, for providers and engines that a config file names: the
#                 static binary loads no config (OPENSSL_INIT_NO_LOAD_CONFIG) and HMAC-SHA256 comes
#                 from the built-in default provider
#  gethostbyname  OpenSSL's BIO_gethostbyname (BIO sockets), which ntbpf never calls
# ld names only a symbol's first caller, so ntbpf's own objects are checked too: getaddrinfo from
# nt_resolve's stream.o only, and none of glibc's other NSS, iconv or dlopen entry points.
# the Debian packages whose static archives are in it (make install copies their copyright files,
# make deb names their sources in Built-Using)
STATIC_PKGS  := libbpf-dev libelf-dev zlib1g-dev libzstd-dev libssl-dev libc6-dev
STATIC_LD_OK := warning: Using '\(getaddrinfo\|dlopen\|gethostbyname\)' in statically linked applications

$(OUTPUT)/static-mark.o: | $(OUTPUT)
	$(Q)echo 'const char nt_linked_static[] = "static";' | $(CC) $(CFLAGS) -x c -c -o $@ -

static: $(OUTPUT)/ntbpf-static

$(OUTPUT)/ntbpf-static: $(OUTPUT)/main.o $(BPFU_OBJS) $(OUTPUT)/libntcore.a $(OUTPUT)/static-mark.o
	$(call msg,LINK,$@)
	$(Q)$(CC) $(LDFLAGS) -static -o $@ $^ $(LDLIBS) -lzstd -lm -lpthread 2> $@.ld || { cat $@.ld >&2; exit 1; }
	$(Q)if grep -v -e ': in function ' -e "$(STATIC_LD_OK)" $@.ld >&2; then \
		echo "$@: a link warning not understood (Makefile, STATIC_LD_OK)" >&2; rm -f $@; exit 1; fi
	$(Q)if $(NM) -A -u $(OUTPUT)/main.o $(BPFU_OBJS) $(OUTPUT)/libntcore.a | grep -w -e getaddrinfo -e gethostbyname \
		-e 'gethostbyname2\(_r\)\?' -e getnameinfo -e 'getpw[a-z_]*' -e 'getgr[a-z_]*' -e 'getserv[a-z_]*' -e iconv_open \
		-e dlopen | grep -v '^$(OUTPUT)/libntcore.a:stream.o: *U getaddrinfo$$' >&2; then \
		echo "$@: glibc's NSS, iconv or dlopen called other than by nt_resolve (src/stream.c)" >&2; rm -f $@; exit 1; fi
	$(Q)if readelf -lW $@ | grep -q -e INTERP -e DYNAMIC; then echo "$@: not static" >&2; rm -f $@; exit 1; fi
	$(Q)rm -f $@.ld

$(OUTPUT)/tests/%: tests/unit/%.c $(OUTPUT)/libntcore.a $(wildcard tests/unit/*.h) | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -Wno-unused-function -Itests/unit -o $@ $< $(OUTPUT)/libntcore.a -lcmocka -lz -lcrypto -lm -lpthread

# test_hooks opens the embedded BPF object (no load, no root): it needs the skeleton and libbpf
$(OUTPUT)/tests/test_hooks: tests/unit/test_hooks.c $(OUTPUT)/libntcore.a $(SKELS) $(wildcard tests/unit/*.h) | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -Wno-unused-function -Itests/unit -o $@ $< $(OUTPUT)/libntcore.a -lcmocka $(LDLIBS) -lm -lpthread

# The fuzzers' corpora and seeds replayed under ASan and UBSan (any report fails it, leaks at exit too):
# the core's sources built into the test with the sanitizers, not libntcore.a
SAN_CFLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
$(OUTPUT)/tests/test_fuzz_corpus: tests/unit/test_fuzz_corpus.c $(wildcard tests/fuzz/*.c) $(CORE_SRCS) $(wildcard src/*.h) \
		$(wildcard include/*.h) $(OUTPUT)/version.stamp | $(OUTPUT)/tests
	$(call msg,CC-SAN,$@)
	$(Q)$(CC) $(CFLAGS) $(SAN_CFLAGS) -Wno-unused-function -Itests/unit -o $@ $< $(CORE_SRCS) -lcmocka -lz -lcrypto \
		-lm -lpthread

# The C reader's every field, for tests/refdec/test_refdec.py (the reference decoder against it)
$(OUTPUT)/tests/refdec-dump: tests/refdec/dump.c tests/fuzz/fuzz_recfile.c $(OUTPUT)/libntcore.a | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -Wno-unused-function -o $@ $< $(OUTPUT)/libntcore.a -lz -lcrypto -lm -lpthread

# Unit tests: no root needed; each binary runs with its golden files from tests/unit/.
# tests/lab/test_sweep.py: the lab sweep's table and charts from fixture numbers (python, no guest).
# tests/lab/test_inject.py, test_scenarios.py: known-answer sites agree; every scenario names real checks.
# tests/docs/check_docs.py: --help, man/ntbpf.8.in, the README and docs/ agree (options, figures,
# stages), the man pages render, every file docs/architecture.md names exists.
# tests/unit/test_includes.py: no import circle among the modules of src/ and include/.
# tests/refdec/test_refdec.py: the C reader against the reference decoder of docs/record-format.md.
check: $(TESTS) $(OUTPUT)/ntbpf $(OUTPUT)/tests/refdec-dump
	$(Q)fail=0; for t in $(TESTS); do \
		echo "== $$t"; NTBPF_TESTDATA=tests/unit $$t || fail=1; \
	done; echo "== tests/lab/test_sweep.py"; python3 tests/lab/test_sweep.py || fail=1; \
	echo "== tests/lab/test_inject.py"; python3 tests/lab/test_inject.py || fail=1; \
	echo "== tests/lab/test_scenarios.py"; python3 tests/lab/test_scenarios.py || fail=1; \
	echo "== tests/docs/check_docs.py"; python3 tests/docs/check_docs.py $(OUTPUT)/ntbpf || fail=1; \
	echo "== tests/unit/test_includes.py"; python3 tests/unit/test_includes.py || fail=1; \
	echo "== tests/refdec/test_refdec.py"; python3 tests/refdec/test_refdec.py $(OUTPUT)/tests/refdec-dump || fail=1; \
	exit $$fail

# Root integration tests on this machine's kernel (block layer only).
# tests/integration/html needs no root: the HTML report in headless Chromium (scripts/deps installs it).
# tests/integration/static: make static's binary alone in an empty root (chroot), and recording here.
# tests/integration/arm64: make ARCH=arm64 static's binary (when built; it builds nothing) under
# qemu-aarch64-static prints what the x86_64 one prints, byte for byte.
test-root: all static $(OUTPUT)/bench-gen
	$(Q)fail=0; tests/integration/run-all || fail=1; tests/integration/prometheus || fail=1; \
		tests/integration/pipes || fail=1; tests/integration/html || fail=1; \
		tests/integration/static || fail=1; tests/integration/arm64 || fail=1; exit $$fail

# The lab's delay injector (tests/lab/inject/): known answers for every stage; never shipped.
# Three objects from one source: with bpf_loop and preemption off during the wait
# (-DINJ_PREEMPT_OFF, kfuncs of 6.10+), with bpf_loop (5.17+), and without it (-DINJ_BOUNDED_LOOP,
# for kernels that refuse the bpf_loop object at load, e.g. 5.10); ntbpf-inject embeds all three
# and loads the first the kernel takes.
$(OUTPUT)/inject.bpf.o: tests/lab/inject/inject.bpf.c tests/lab/inject/inject.h vmlinux/vmlinux.h | $(OUTPUT)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -Itests/lab/inject -c $< -o $@

$(OUTPUT)/inject-bounded.bpf.o: tests/lab/inject/inject.bpf.c tests/lab/inject/inject.h vmlinux/vmlinux.h | $(OUTPUT)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -DINJ_BOUNDED_LOOP -Itests/lab/inject -c $< -o $@

$(OUTPUT)/inject-nopreempt.bpf.o: tests/lab/inject/inject.bpf.c tests/lab/inject/inject.h vmlinux/vmlinux.h | $(OUTPUT)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -DINJ_PREEMPT_OFF -Itests/lab/inject -c $< -o $@

$(OUTPUT)/ntbpf-inject: tests/lab/inject/inject.c tests/lab/inject/inject.h $(OUTPUT)/inject.skel.h $(OUTPUT)/inject-bounded.skel.h \
		$(OUTPUT)/inject-nopreempt.skel.h
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) -Itests/lab/inject -o $@ $< $(LDLIBS)

# Lab tests: real NVMe/TCP in QEMU guests (tests/lab/).
# (the arm64 scenarios boot make ARCH=arm64 static's binary: built here too)
test-lab: all static $(OUTPUT)/ntbpf-inject
	$(Q)$(MAKE) --no-print-directory ARCH=arm64 static
	$(Q)if [ -x tests/lab/test ]; then tests/lab/test; else echo "lab: not present"; fi

# make ARCH=arm64 static early: test-root's tests/integration/arm64 runs that binary
test: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)$(MAKE) --no-print-directory ARCH=arm64 static
	$(Q)$(MAKE) --no-print-directory check
	$(Q)$(MAKE) --no-print-directory fuzz-ci
	$(Q)$(MAKE) --no-print-directory test-root
	$(Q)$(MAKE) --no-print-directory test-install
	$(Q)$(MAKE) --no-print-directory test-lab

deps: $(if $(CROSS),deps-$(ARCH))
	$(Q)scripts/deps

# the arm64 cross build's own packages (gcc-aarch64-linux-gnu, the :arm64 archives of STATIC_PKGS,
# qemu-user-static for tests/integration/arm64, qemu-system-arm for the arm64 lab): scripts/deps
# installs them too (make deps, make test), make ARCH=arm64 asks for them alone
deps-arm64:
	$(Q)scripts/deps-arm64

# ---- man pages, install, package ----

PREFIX     ?= /usr/local
SBINDIR    ?= $(PREFIX)/sbin
MANDIR     ?= $(PREFIX)/share/man
DOCDIR     ?= $(PREFIX)/share/doc/ntbpf
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
SUBCMDS    := record report script live probe
MANPAGES   := $(OUTPUT)/man/ntbpf.8 $(patsubst %,$(OUTPUT)/man/ntbpf-%.8,$(SUBCMDS))
summary_record := record one record per NVMe/TCP (or block) I/O on this host
summary_report := merge the record files of both hosts and print the per-stage latency breakdown
summary_script := print every I/O of record files as a row, initiator and target merged (CSV, JSON Lines)
summary_live   := stage latencies every interval, and a Prometheus / OpenMetrics endpoint
summary_probe  := list the kernel hooks ntbpf wants and how they attach here

$(OUTPUT)/man:
	$(Q)mkdir -p $@

$(OUTPUT)/man/ntbpf.8: man/ntbpf.8.in $(OUTPUT)/version.stamp | $(OUTPUT)/man
	$(call msg,MAN,$@)
	$(Q)sed 's/@VERSION@/$(VERSION)/' $< > $@

# subcommand pages are made from --help, so the two never disagree; a cross build's from its own
# static binary's --help under qemu-user (scripts/deps-arm64 installs qemu-user-static)
ifdef CROSS
HELP_BIN := $(OUTPUT)/ntbpf-help
$(HELP_BIN): $(OUTPUT)/ntbpf-static
	$(Q)printf '#!/bin/sh\nexec qemu-aarch64-static "$$(dirname "$$0")/ntbpf-static" "$$@"\n' > $@ && chmod +x $@
else
HELP_BIN := $(OUTPUT)/ntbpf
endif
$(OUTPUT)/man/ntbpf-%.8: $(HELP_BIN) scripts/man-from-help | $(OUTPUT)/man
	$(call msg,MAN,$@)
	$(Q)scripts/man-from-help $(HELP_BIN) $* '$(VERSION)' '$(summary_$*)' > $@

man: $(MANPAGES)

# the static binary (make static): the one file that runs on any distro
install: static man
	$(Q)install -d $(DESTDIR)$(SBINDIR) $(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(DOCDIR)
	$(Q)install -m 0755 $(OUTPUT)/ntbpf-static $(DESTDIR)$(SBINDIR)/ntbpf
	$(Q)install -m 0644 $(MANPAGES) $(DESTDIR)$(MANDIR)/man8/
	$(Q)install -m 0644 contrib/bash-completion/ntbpf $(DESTDIR)$(BASHCOMPDIR)/ntbpf
	$(Q)install -m 0644 LICENSE README.md contrib/grafana-dashboard.json $(DESTDIR)$(DOCDIR)/
	$(Q)install -d $(DESTDIR)$(DOCDIR)/LICENSES
	$(Q)install -m 0644 LICENSES/* $(DESTDIR)$(DOCDIR)/LICENSES/
	$(Q)install -d $(DESTDIR)$(DOCDIR)/bundled
	$(Q)for p in $(STATIC_PKGS); do install -m 0644 /usr/share/doc/$$p/copyright $(DESTDIR)$(DOCDIR)/bundled/$$p.copyright; done
	$(call msg,INSTALL,$(DESTDIR)$(SBINDIR)/ntbpf)

uninstall:
	$(Q)rm -f $(DESTDIR)$(SBINDIR)/ntbpf $(DESTDIR)$(BASHCOMPDIR)/ntbpf \
		$(patsubst $(OUTPUT)/man/%,$(DESTDIR)$(MANDIR)/man8/%,$(MANPAGES))
	$(Q)rm -rf $(DESTDIR)$(DOCDIR)

# Debian package: 0.4.0-dev+gHASH -> 0.4.0~dev+gHASH (sorts before 0.4.0), 0.4.0-3-gHASH -> 0.4.0+3.gHASH
DEB_VERSION := $(shell echo '$(VERSION)' | sed -e 's/-dev+/~dev+/' -e 's/-\([0-9]*\)-g/+\1.g/' -e 's/^unknown$$/0~unknown/')
DEB_ARCH    ?= $(shell dpkg --print-architecture 2>/dev/null || echo amd64)
DEB         := $(OUTPUT)/ntbpf_$(DEB_VERSION)_$(DEB_ARCH).deb

deb: $(DEB)

$(DEB): $(OUTPUT)/ntbpf-static $(MANPAGES) contrib/bash-completion/ntbpf contrib/grafana-dashboard.json LICENSE
	$(call msg,DEB,$@)
	$(Q)rm -rf $(OUTPUT)/deb && $(MAKE) --no-print-directory install PREFIX=/usr DESTDIR=$(CURDIR)/$(OUTPUT)/deb >/dev/null
	$(Q)gzip -9n $(OUTPUT)/deb/usr/share/man/man8/*.8
	$(Q)scripts/deb-control $(OUTPUT)/deb $(OUTPUT)/deb/usr/sbin/ntbpf '$(DEB_VERSION)' $(DEB_ARCH) \
		$(if $(CROSS),$(addsuffix :$(DEB_ARCH),$(STATIC_PKGS)),$(STATIC_PKGS))
	$(Q)dpkg-deb --root-owner-group -Zxz --build $(OUTPUT)/deb $@ >/dev/null

# the version this tree builds as, and its Debian form (tests/install/run checks both, in git and out)
print-version:
	@echo '$(VERSION) $(DEB_VERSION)'

# make install, the man pages, the completion and make deb, in scratch directories (no root)
test-install: all static
	$(Q)tests/install/run

demo: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)tests/lab/demo

demo-exact: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)tests/lab/demo --exact

lab-shell: all
	$(Q)tests/lab/run --shell --kernel $(or $(KERNEL),6.12)

$(OUTPUT)/bench-gen: bench/gen.c bench/synth.h $(OUTPUT)/libntcore.a
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -Ibench -o $@ $< $(OUTPUT)/libntcore.a -lz -lm

$(OUTPUT)/bench-recfile: bench/recfile-speed.c bench/synth.h $(OUTPUT)/libntcore.a
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -Ibench -o $@ $< $(OUTPUT)/libntcore.a -lz -lm

# The record codec alone (bench/recfile-speed.c): its rows go after bench/run's.
bench: all $(OUTPUT)/bench-gen $(OUTPUT)/bench-recfile $(OUTPUT)/ntbpf-inject
	$(Q)$(OUTPUT)/bench-recfile $${NTBPF_BENCH_N:-2000000} > $(OUTPUT)/bench-recfile.md
	$(Q)cat $(OUTPUT)/bench-recfile.md
	$(Q)bench/run
	$(Q)cat $(OUTPUT)/bench-recfile.md >> $(OUTPUT)/bench/results.md

# libFuzzer over the record file reader (tests/fuzz/fuzz_recfile.c), Debian's clang.  It starts from
# tests/fuzz/corpus (committed, replayed by make check) and tests/fuzz/seeds, and writes what it
# finds to $(OUTPUT)/fuzz/corpus; make fuzz-merge minimizes that into tests/fuzz/corpus.  One job:
# the machine is shared.
FUZZ_SECONDS ?= 60
FUZZ_CFLAGS := -O2 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	       -Iinclude -Isrc -DNT_FUZZ_MAIN
FUZZ_SRCS := src/recfile.c src/rechdr.c src/recsum.c src/colenc.c src/coldec.c
$(OUTPUT)/fuzz-recfile: tests/fuzz/fuzz_recfile.c $(FUZZ_SRCS) $(wildcard src/*.h) $(wildcard include/*.h) | $(OUTPUT)
	$(call msg,CLANG,$@)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) -o $@ tests/fuzz/fuzz_recfile.c $(FUZZ_SRCS) -lz

# The report's whole path (pairing, groups, --diagnose, JSON, script's rows) over two adversarial
# record files (tests/fuzz/fuzz_report.c, seeds in tests/fuzz/seeds-report), and the metrics
# endpoint's HTTP request handling (tests/fuzz/fuzz_http.c, seeds in tests/fuzz/seeds-http), and the
# facts file parser, round trip and hook decision (tests/fuzz/fuzz_facts.c, seeds: tests/unit/facts-*.txt),
# and the live stream's two ends over loopback (tests/fuzz/fuzz_stream.c: the client reading a stream,
# the server's handshake).
FUZZ_CORE := $(CORE_SRCS)
$(OUTPUT)/fuzz-report: tests/fuzz/fuzz_report.c tests/fuzz/fuzz_recfile.c $(FUZZ_CORE) $(wildcard src/*.h) $(wildcard include/*.h) | $(OUTPUT)
	$(call msg,CLANG,$@)
	$(Q)$(CLANG) $(filter-out -DNT_FUZZ_MAIN,$(FUZZ_CFLAGS)) -DNTBPF_VERSION='"fuzz"' -o $@ tests/fuzz/fuzz_report.c \
		$(FUZZ_CORE) -lz -lcrypto -lm -lpthread
$(OUTPUT)/fuzz-facts: tests/fuzz/fuzz_facts.c $(FUZZ_CORE) $(wildcard src/*.h) $(wildcard include/*.h) | $(OUTPUT)
	$(call msg,CLANG,$@)
	$(Q)$(CLANG) $(filter-out -DNT_FUZZ_MAIN,$(FUZZ_CFLAGS)) -DNTBPF_VERSION='"fuzz"' -o $@ tests/fuzz/fuzz_facts.c \
		$(FUZZ_CORE) -lz -lcrypto -lm -lpthread
$(OUTPUT)/fuzz-stream: tests/fuzz/fuzz_stream.c tests/fuzz/fuzz_recfile.c $(FUZZ_CORE) $(wildcard src/*.h) $(wildcard include/*.h) | $(OUTPUT)
	$(call msg,CLANG,$@)
	$(Q)$(CLANG) $(filter-out -DNT_FUZZ_MAIN,$(FUZZ_CFLAGS)) -DNTBPF_VERSION='"fuzz"' -o $@ tests/fuzz/fuzz_stream.c \
		$(FUZZ_CORE) -lz -lcrypto -lm -lpthread
$(OUTPUT)/fuzz-http: tests/fuzz/fuzz_http.c $(FUZZ_CORE) $(wildcard src/*.h) $(wildcard include/*.h) | $(OUTPUT)
	$(call msg,CLANG,$@)
	$(Q)$(CLANG) $(filter-out -DNT_FUZZ_MAIN,$(FUZZ_CFLAGS)) -DNTBPF_VERSION='"fuzz"' -o $@ tests/fuzz/fuzz_http.c \
		$(FUZZ_CORE) -lz -lcrypto -lm -lpthread

FUZZ_DIR := $(abspath $(OUTPUT))/fuzz
FUZZ_TARGET ?= recfile
fuzz_seeds_recfile := tests/fuzz/corpus tests/fuzz/seeds
fuzz_seeds_report := tests/fuzz/seeds-report
fuzz_seeds_http := tests/fuzz/seeds-http
fuzz_seeds_facts := tests/fuzz/seeds-facts
fuzz_seeds_stream := tests/fuzz/seeds-stream
fuzz: $(OUTPUT)/fuzz-$(FUZZ_TARGET)
	$(Q)mkdir -p $(FUZZ_DIR)/$(FUZZ_TARGET)/corpus $(FUZZ_DIR)/$(FUZZ_TARGET)/crashes
	$(Q)cd $(FUZZ_DIR)/$(FUZZ_TARGET) && $(abspath $(OUTPUT))/fuzz-$(FUZZ_TARGET) -jobs=1 -workers=1 \
		-max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=1024 -max_len=$(if $(filter report,$(FUZZ_TARGET)),262144,65536) \
		-print_final_stats=1 -artifact_prefix=$(FUZZ_DIR)/$(FUZZ_TARGET)/crashes/ \
		$(FUZZ_DIR)/$(FUZZ_TARGET)/corpus $(addprefix $(CURDIR)/,$(fuzz_seeds_$(FUZZ_TARGET))); \
		rc=$$?; tail -n 8 fuzz-0.log; ls crashes; exit $$rc

# make test: every target for a bounded time under ASan and UBSan (-fno-sanitize-recover: any report
# fails it, leaks included), one after the other (the machine is shared)
FUZZ_CI_SECONDS ?= 30
fuzz-ci: $(OUTPUT)/fuzz-recfile $(OUTPUT)/fuzz-report $(OUTPUT)/fuzz-http $(OUTPUT)/fuzz-facts $(OUTPUT)/fuzz-stream
	$(Q)fail=0; for t in recfile report http facts stream; do \
		echo "== fuzz-$$t: $(FUZZ_CI_SECONDS) s"; \
		$(MAKE) --no-print-directory fuzz FUZZ_TARGET=$$t FUZZ_SECONDS=$(FUZZ_CI_SECONDS) || fail=1; \
	done; exit $$fail

fuzz-merge: $(OUTPUT)/fuzz-recfile
	$(Q)rm -rf $(FUZZ_DIR)/merged && mkdir -p $(FUZZ_DIR)/merged $(FUZZ_DIR)/corpus
	$(Q)$(OUTPUT)/fuzz-recfile -merge=1 $(FUZZ_DIR)/merged tests/fuzz/seeds tests/fuzz/corpus $(FUZZ_DIR)/corpus
	$(Q)rm -rf tests/fuzz/corpus && mv $(FUZZ_DIR)/merged tests/fuzz/corpus

# Regenerate vmlinux/vmlinux.h from the pinned Debian kernel package.
vmlinux:
	$(Q)vmlinux/gen $(if $(filter arm64,$(ARCH)),6.12-arm64)

clean:
	$(Q)rm -rf $(OUTPUT)
