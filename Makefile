# SPDX-License-Identifier: Apache-2.0
# pdkv — top-level build. Every module (ref/*/, harness/*/) owns a module.mk that appends to
# LIBS, BINS and TESTS; this file turns those lists into rules, so adding a module never means
# editing this file. Binaries land in $(BUILD)/bin, test programs in $(BUILD)/tests.
BUILD    ?= build
CC       ?= cc
SAN      ?=
OPT      ?= -O2
CFLAGS   ?= $(OPT) -g
CFLAGS   += -std=gnu11 -Wall -Wextra -Werror -D_GNU_SOURCE -pthread $(SAN) \
            -Iref -Iref/common -Iharness -I/usr/include/cjson
LDFLAGS  += -pthread $(SAN)
SYSLIBS  := -lcjson -lcurl -lmicrohttpd -lhiredis -lzmq -lmsgpackc -libverbs -lcmocka -lm -ldl -lrt

.DEFAULT_GOAL := all
LIBS  :=
BINS  :=
TESTS :=
TEST_SCRIPTS :=
FUZZ  :=
# the first rule of an included .mk must not become the default goal
.DEFAULT_GOAL := all
include $(sort $(wildcard ref/*/*.mk harness/module.mk harness/*/*.mk))
include $(sort $(wildcard ref/*/fuzz/fuzz.mk harness/*/fuzz/fuzz.mk))

DEPS_STAMP := $(BUILD)/.deps-ok
LIBFILES   := $(foreach l,$(LIBS),$(BUILD)/lib/lib$(l).a)
BINFILES   := $(foreach b,$(BINS),$(BUILD)/bin/$(b))
TESTFILES  := $(foreach t,$(TESTS),$(BUILD)/tests/$(t))

.PHONY: all test asan tsan fuzz fuzz-build run run-hostile bench test-rxe test-interop test-gpu clean deps format check-format tidy
all: $(BINFILES) $(TESTFILES)

# Fresh machine: install the Debian packages once (ci/install-deps.sh is idempotent).
$(DEPS_STAMP): ci/install-deps.sh
	@mkdir -p $(@D)
	@bash ci/install-deps.sh
	@touch $@
deps: $(DEPS_STAMP)

$(BUILD)/obj/%.o: %.c | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

define lib_rule
$(BUILD)/lib/lib$(1).a: $$(patsubst %.c,$(BUILD)/obj/%.o,$$($(1)_SRCS))
	@mkdir -p $$(@D)
	@rm -f $$@
	$$(AR) rcs $$@ $$^
endef
# A binary links the libraries named in NAME_LIBS (all of them when unset), so one module's
# half-finished code never breaks another module's build.
libs_of = $(foreach l,$(if $($(1)_LIBS),$($(1)_LIBS),$(LIBS)),$(BUILD)/lib/lib$(l).a)
define bin_rule
$(2)/$(1): $$(patsubst %.c,$(BUILD)/obj/%.o,$$($(1)_SRCS)) $$(call libs_of,$(1))
	@mkdir -p $$(@D)
	$$(CC) $$(LDFLAGS) $$(FUZZ_LINK) -o $$@ $$(patsubst %.c,$(BUILD)/obj/%.o,$$($(1)_SRCS)) \
	  -Wl,--start-group $$(call libs_of,$(1)) -Wl,--end-group $$(SYSLIBS)
endef
$(foreach l,$(LIBS),$(eval $(call lib_rule,$(l))))
$(foreach b,$(BINS),$(eval $(call bin_rule,$(b),$(BUILD)/bin)))
$(foreach t,$(TESTS),$(eval $(call bin_rule,$(t),$(BUILD)/tests)))

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)

# The README's test command. Runs every test program and test script, one line each, then
# "tests: N passed, N failed". T=name-substring narrows it.
test: all
	@BUILD=$(BUILD) bash ci/run-tests.sh $(T)

asan:
	@$(MAKE) --no-print-directory BUILD=build-asan OPT=-O1 \
	  SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" test

# ThreadSanitizer build of everything (build-tsan); T= narrows the tests as for asan. Every
# process's reports go to build-tsan/tsan-logs/tsan.PID (a test with one exits 66); ci/tsan.supp
# silences third-party frames only (docs/sanitizers.md). PDKV_MEM_SCALE: TSan's shadow memory
# multiplies the memory that tests measure.
TSAN_OPTIONS ?= halt_on_error=0 second_deadlock_stack=1 suppressions=$(CURDIR)/ci/tsan.supp \
  log_path=$(CURDIR)/build-tsan/tsan-logs/tsan
tsan:
	@rm -rf build-tsan/tsan-logs; mkdir -p build-tsan/tsan-logs
	@TSAN_OPTIONS="$(TSAN_OPTIONS)" PDKV_MEM_SCALE=$${PDKV_MEM_SCALE:-5} \
	  $(MAKE) --no-print-directory BUILD=build-tsan OPT=-O1 \
	  SAN="-fsanitize=thread -fno-omit-frame-pointer" test; rc=$$?; \
	n=$$(cat build-tsan/tsan-logs/* 2>/dev/null | grep -c '^WARNING: ThreadSanitizer'); \
	echo "tsan: $$n reports in build-tsan/tsan-logs/"; [ $$rc -eq 0 ] && [ $$n -eq 0 ]

# libFuzzer targets (FUZZ in */fuzz/fuzz.mk) through clang, each run FUZZ_SECONDS on its corpus
# fixtures/fuzz/<target>/seeds (+ regress), FUZZ_JOBS targets at once (ci/fuzz-one.sh each);
# new inputs go to build-fuzz/corpus/<target>.
FUZZ_SECONDS ?= 60
FUZZ_JOBS    ?= 2
FUZZ_CC      ?= clang-14
FUZZFILES    := $(foreach f,$(FUZZ),$(BUILD)/fuzz/$(f))
$(foreach f,$(FUZZ),$(eval $(call bin_rule,$(f),$(BUILD)/fuzz)))
fuzz-build: $(FUZZFILES)
fuzz:
	@$(MAKE) --no-print-directory BUILD=build-fuzz CC=$(FUZZ_CC) OPT=-O1 \
	  SAN="-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" \
	  FUZZ_LINK=-fsanitize=fuzzer fuzz-build
	@printf '%s\n' $(FUZZ) | xargs -P $(FUZZ_JOBS) -I{} bash ci/fuzz-one.sh {} $(FUZZ_SECONDS)

# The README's main command: the default scenario suite on local TCP with a local etcd.
run: all
	@$(BUILD)/bin/pdkv run --json reports/out/run.json --junit reports/out/junit.xml

# Faults and hostile peers (scenarios/hostile/: killed nodes, cut links, rogue peers, floods),
# apart so that `make run` stays quick; `make test` runs them too (harness/tests/test_run_hostile.sh).
run-hostile: all
	@$(BUILD)/bin/pdkv run --json reports/out/run-hostile.json \
	  --junit reports/out/junit-hostile.xml scenarios/hostile

bench: all
	@BUILD=$(BUILD) bash ci/bench.sh

test-rxe: all
	@BUILD=$(BUILD) bash ci/rxe/run-rxe-tier.sh

# pdkv <-> your Mooncake: MOONCAKE_BENCH=/path/to/transfer_engine_bench (or on PATH); 77 without.
test-interop: all
	@$(BUILD)/bin/pdkv interop --json $(BUILD)/interop.json

# The GPU tier: CUDA tests, pdkv bench --use_vram (nvlink_intra, tcp), ratios; 77 without CUDA.
test-gpu: all
	@BUILD=$(BUILD) bash ci/gpu/run-gpu-tier.sh

format:
	@clang-format -i $$(git ls-files --cached --others --exclude-standard '*.c' '*.h')

# CI's format gate: lists the files that differ from .clang-format and the command to fix them.
check-format:
	@bash ci/check-format.sh

# .clang-tidy's function-size limit over every C file; fails when any function is over it.
CLANG_TIDY ?= clang-tidy-14
tidy:
	@command -v $(CLANG_TIDY) >/dev/null || { echo "tidy: $(CLANG_TIDY) not found (ci/install-deps.sh installs it)"; exit 1; }
	@out=$$($(CLANG_TIDY) --quiet $$(git ls-files '*.c') -- $(CFLAGS) 2>/dev/null | \
	  grep -A1 'readability-function-size' | grep 'warning:' || true); \
	if [ -n "$$out" ]; then echo "$$out"; exit 1; else echo "tidy: every function within the limit"; fi

clean:
	rm -rf build build-asan build-tsan build-fuzz
