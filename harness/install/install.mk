# SPDX-License-Identifier: Apache-2.0
# install: `make install PREFIX=/usr/local DESTDIR=` (binaries, scenarios, fixtures, docs, one
# man page per command) and `make deb` (dpkg-buildpackage with harness/install/debian/, into
# $(BUILD)/pdkv_*.deb and -dbgsym) — harness/install/pkg.sh.
PREFIX  ?= /usr/local
DESTDIR ?=
PDKV_VERSION ?= 0.1

# recipes expand $(BINFILES) when they run, after every module.mk has added its binaries
.PHONY: install deb
install:
	@$(MAKE) --no-print-directory $(BINFILES)
	@BUILD=$(BUILD) PREFIX=$(PREFIX) DESTDIR=$(DESTDIR) VERSION=$(PDKV_VERSION) \
	  bash harness/install/pkg.sh install
deb:
	@$(MAKE) --no-print-directory $(BINFILES)
	@BUILD=$(BUILD) VERSION=$(PDKV_VERSION) bash harness/install/pkg.sh deb
# every command, without the test programs (the package build's dh_auto_build)
.PHONY: bins
bins:
	@$(MAKE) --no-print-directory $(BINFILES)
