# Tumble: one Makefile for the server, the tools, the web client and the tests.
#
#   make            build everything into build/ (server, bench, load tool, tests, web client)
#   make deps       install the Debian packages that are missing (as root), or name them
#   make run        deps + build + start the server on http://localhost:8080
#   make test       the whole suite: C unit tests (plain and ASan+UBSan), JS tests,
#                   integration tests against a real server, fuzz corpus replay
#   make bench      the benchmark programs (JSON lines on stdout)
#   make wasm       the physics as WebAssembly: build/wasm/tumble-physics.wasm (clang wasm32-wasi)
#   make fuzz       run every libFuzzer target for FUZZ_SECONDS each
#   make test-valgrind  the server under valgrind memcheck for a short scripted session
#   make clean
#
# Sources are found by folder, so adding a file needs no edit here:
#   server/physics/*.c proto/c/*.c server/sim/*.c server/net/*.c  -> build/libtumble.a
#   server/main.c                                                  -> build/tumble-server
#   tests/bench/*.c                                                -> build/tumble-bench
#   tests/netem/*.c            the link emulator (a TCP proxy)     -> build/tumble-netem
#   tests/unit/test_*.c        one cmocka program each             -> build/tests/, build/asan/tests/
#   tests/fuzz/fuzz_*.c        one libFuzzer target each (clang)   -> build/fuzz/

CC       ?= cc
ifeq ($(origin CC),default)
CC       := gcc
endif
CLANG    ?= clang
BUILD    := build
PKGS     := libuv libwebsockets msgpack hiredis

PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)

WARN     := -std=c11 -Wall -Wextra -Werror -Wno-unused-parameter -Wformat=2 -Wno-psabi
# -ffp-contract=off: no fused multiply-adds, so every platform rounds the physics alike
# (GCC in ISO mode already does; clang fuses by default where the CPU has FMA).
# -fno-math-errno: sqrtf is the plain IEEE square root, which the SIMD layer
# (server/physics/simd.h) can vectorise; results do not change (nothing reads errno).
MATH     := -fno-math-errno -ffp-contract=off
INC      := -Iserver -Iproto/c -Itests
CFLAGS_REL  := $(WARN) $(MATH) -O2 -g -DNDEBUG $(INC) $(PKG_CFLAGS)
CFLAGS_ASAN := $(WARN) $(MATH) -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=undefined \
               -fno-omit-frame-pointer $(INC) $(PKG_CFLAGS)
LDLIBS      := $(PKG_LIBS) -lpthread -lm

LIB_SRC   := $(wildcard server/physics/*.c proto/c/*.c server/sim/*.c server/net/*.c)
BENCH_SRC := $(wildcard tests/bench/*.c)
LOAD_SRC  := $(wildcard tests/load/*.c)
NETEM_SRC := $(wildcard tests/netem/*.c)
UNIT_SRC  := $(wildcard tests/unit/test_*.c)
UNIT_HELP := $(filter-out tests/unit/test_%,$(wildcard tests/unit/*.c))
FUZZ_SRC  := $(wildcard tests/fuzz/fuzz_*.c)

rel_obj  = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))
asan_obj = $(patsubst %.c,$(BUILD)/asan/obj/%.o,$(1))

LIB_REL   := $(BUILD)/libtumble.a
LIB_ASAN  := $(BUILD)/asan/libtumble.a
UNIT_REL  := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRC))
UNIT_ASAN := $(patsubst tests/unit/%.c,$(BUILD)/asan/tests/%,$(UNIT_SRC))
FUZZ_BIN  := $(patsubst tests/fuzz/%.c,$(BUILD)/fuzz/%,$(FUZZ_SRC))

PROGRAMS := $(if $(wildcard server/main.c),$(BUILD)/tumble-server) \
            $(if $(BENCH_SRC),$(BUILD)/tumble-bench) \
            $(if $(LOAD_SRC),$(BUILD)/tumble-load) \
            $(if $(NETEM_SRC),$(BUILD)/tumble-netem)

WEB_DIST := $(if $(wildcard client-web/build.mjs),client-web/dist/index.html)

.SECONDARY:
.PHONY: wasm all deps deps-build run test test-c test-js test-integration test-docker test-valgrind bench fuzz clean
.DEFAULT_GOAL := all

all: $(PROGRAMS) $(UNIT_REL) $(UNIT_ASAN) $(WEB_DIST) node_modules/.package-lock.json

deps:
	@scripts/deps.sh test
deps-build:
	@scripts/deps.sh build

# ---- objects and libraries -------------------------------------------------

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_REL) -MMD -MP -c $< -o $@

$(BUILD)/asan/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ASAN) -MMD -MP -c $< -o $@

$(LIB_REL): $(call rel_obj,$(LIB_SRC))
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(LIB_ASAN): $(call asan_obj,$(LIB_SRC))
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

# ---- programs ----------------------------------------------------------------

$(BUILD)/tumble-server: $(call rel_obj,server/main.c) $(LIB_REL)
	$(CC) $(CFLAGS_REL) $^ -o $@ $(LDLIBS)

$(BUILD)/asan/tumble-server: $(call asan_obj,server/main.c) $(LIB_ASAN)
	$(CC) $(CFLAGS_ASAN) $^ -o $@ $(LDLIBS)

$(BUILD)/tumble-bench: $(call rel_obj,$(BENCH_SRC)) $(LIB_REL)
	$(CC) $(CFLAGS_REL) $^ -o $@ $(LDLIBS)

$(BUILD)/tumble-load: $(call rel_obj,$(LOAD_SRC)) $(LIB_REL)
	$(CC) $(CFLAGS_REL) $^ -o $@ $(LDLIBS)

# The link emulator needs only libuv (tests/netem/netem.c).
$(BUILD)/tumble-netem: $(call rel_obj,$(NETEM_SRC))
	$(CC) $(CFLAGS_REL) $^ -o $@ $(shell pkg-config --libs libuv)

# ---- C unit tests (cmocka), each built plain and with sanitizers -------------

$(BUILD)/tests/%: $(call rel_obj,tests/unit/%.c) $(call rel_obj,$(UNIT_HELP)) $(LIB_REL)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_REL) $^ -o $@ $(LDLIBS) -lcmocka

$(BUILD)/asan/tests/%: $(call asan_obj,tests/unit/%.c) $(call asan_obj,$(UNIT_HELP)) $(LIB_ASAN)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ASAN) $^ -o $@ $(LDLIBS) -lcmocka

# ---- fuzz targets (clang libFuzzer), linked against the codec sources --------

FUZZ_LIB_SRC := $(wildcard proto/c/*.c)
$(BUILD)/fuzz/%: tests/fuzz/%.c $(FUZZ_LIB_SRC)
	@mkdir -p $(dir $@)
	$(CLANG) $(WARN) -g -O1 -fsanitize=fuzzer,address,undefined $(INC) \
	  $(shell pkg-config --cflags msgpack) $^ -o $@ $(shell pkg-config --libs msgpack) -lm

FUZZ_SECONDS ?= 60
fuzz: $(FUZZ_BIN)
	@for f in $(FUZZ_BIN); do n=$$(basename $$f); mkdir -p $(BUILD)/fuzz/corpus-$$n; \
	  echo "== $$n ($(FUZZ_SECONDS) s)"; \
	  $$f -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 $(BUILD)/fuzz/corpus-$$n tests/fuzz/corpus/$$n || exit 1; done

# ---- WebAssembly: the physics for the browser (and Node), the same bits as native ----
#
# Debian's clang for wasm32-wasi with wasi-libc, lld and the wasm32 compiler-rt
# (scripts/deps.sh). A WASI reactor: no main runs; the loader (client-web/src/
# physics/wasm.js) calls _initialize, then any exported function. Exported
# (default visibility + --export-dynamic): the physics, the world-hash driver
# (tests/bench/bench_world_hash.c), the replay viewer's calls (server/wasm/
# viewer.c), malloc and free. Built in but hidden (-fvisibility=hidden, so
# the linker keeps only what the viewer reaches): sim's replay engine and
# world adapters (sim/replay.c, world_*.c, room.c ...: the same input
# application as the server, no libuv, no threads) and proto's snapshot
# encoder, whose msgpack-c use is header-only (packing; the headers are
# linked into build/wasm/include, never the host's libc headers). The
# physics includes no <pthread.h> (wasi-libc has none): the settled-tower
# memo lives in sim (sim/tower_memo.c) and is not built in (a replay settles
# each tower anew, with the same bits). --strip-all drops the function-name
# section (266 kB instead of 490; exports keep their names).

WASM_CC     ?= clang
WASM_INC    := $(BUILD)/wasm/include
WASM_CFLAGS := --target=wasm32-wasi --sysroot=/usr $(WARN) $(MATH) -O2 -DNDEBUG -fvisibility=default \
               -Iserver -Itests -Iproto/c -I$(WASM_INC)
WASM_SIM    := room.c ring.c record.c replay.c room_image.c scenes.c error.c pose_history.c \
               world_common.c world_rigid.c world_cloth.c world_soft.c
WASM_PROTO  := tb_snap_encoder.c tb_snap_quant.c tb_proto_server.c tb_proto_mp.c
WASM_SRC    := $(wildcard server/physics/*.c) tests/bench/bench_world_hash.c server/wasm/viewer.c server/wasm/predict.c \
               $(addprefix server/sim/,$(WASM_SIM)) $(addprefix proto/c/,$(WASM_PROTO))
WASM_OBJ    := $(patsubst %.c,$(BUILD)/wasm/obj/%.o,$(WASM_SRC))

$(WASM_INC)/msgpack.h:
	@mkdir -p $(WASM_INC)
	ln -sfn /usr/include/msgpack $(WASM_INC)/msgpack
	ln -sf /usr/include/msgpack.h $@

$(BUILD)/wasm/obj/server/sim/%.o $(BUILD)/wasm/obj/proto/c/%.o: WASM_VIS := -fvisibility=hidden
$(BUILD)/wasm/obj/%.o: %.c $(WASM_INC)/msgpack.h
	@mkdir -p $(dir $@)
	$(WASM_CC) $(WASM_CFLAGS) $(WASM_VIS) -MMD -MP -c $< -o $@

$(BUILD)/wasm/tumble-physics.wasm: $(WASM_OBJ)
	$(WASM_CC) $(WASM_CFLAGS) -mexec-model=reactor -Wl,--export-dynamic -Wl,--export=malloc -Wl,--export=free \
	  -Wl,--strip-all $^ -o $@

wasm: $(BUILD)/wasm/tumble-physics.wasm

# ---- JavaScript: one package.json at the top (codec, client build, JS tests) ----

node_modules/.package-lock.json: package.json package-lock.json
	scripts/npm-ci.sh
	@touch $@

# The client carries the physics as WebAssembly for its replay viewer (copied into dist).
client-web/dist/index.html: node_modules/.package-lock.json $(BUILD)/wasm/tumble-physics.wasm \
                            $(shell find client-web/src proto/js client-web/build.mjs -type f 2>/dev/null)
	node client-web/build.mjs

# ---- running and testing ---------------------------------------------------------

run: deps-build
	$(MAKE) $(BUILD)/tumble-server $(WEB_DIST)
	$(BUILD)/tumble-server $(RUN_ARGS)

test: deps
	$(MAKE) all wasm $(FUZZ_BIN) $(BUILD)/asan/tumble-server
	tests/run-all.sh

# The image test builds the server and client inside the image; on the host it needs
# node_modules only for its WebSocket client (docker/ws-smoke.mjs).
test-docker: deps
	$(MAKE) node_modules/.package-lock.json
	docker/test-image.sh

# The server under valgrind memcheck (tests/valgrind/scenario.mjs): join,
# inputs in every world kind, leave, SIGTERM with a state save; any memory
# error or definite/indirect leak fails it. Report: build/valgrind.log.
test-valgrind: $(BUILD)/tumble-server node_modules/.package-lock.json
	node tests/valgrind/scenario.mjs

bench: deps-build
	$(MAKE) $(BUILD)/tumble-bench
	$(BUILD)/tumble-bench

clean:
	rm -rf $(BUILD) client-web/dist node_modules

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
