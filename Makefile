# carlo — one build: the CPU backends always, the CUDA backends when nvcc is found.
#   make                 build build/carlo, build/libcarlo.a, build/carlo.so
#   make CUDA=0          CPU-only build, even where nvcc exists
#   make MPI=1           with MPI (mpirun -np R build/carlo script.lua; carlo-mpi(7)): mpicc's
#                        flags (Open MPI's --showme), or MPI_CFLAGS=... MPI_LIBS=... given
#   make LUA_CFLAGS=... LUA_LIBS=...   Lua from somewhere pkg-config does not know
#                        (scripts/lua-from-debs prints these for Lua unpacked from .deb files)
#   make test | test-gpu | validate | bench | demo | install PREFIX=... | clean

PREFIX     ?= /usr/local
BUILD      ?= build
NVCC       ?= nvcc
PKG_CONFIG ?= pkg-config

CUDA ?= $(if $(shell command -v $(NVCC) 2>/dev/null),1,0)

# MPI only when asked for (MPI=1): src/mpi/mpi.c then, else the one-process src/mpi/mpi_none.c.
MPI   ?= 0
MPICC ?= mpicc
ifeq ($(MPI),1)
ifeq ($(origin MPI_LIBS),undefined)
ifeq ($(shell command -v $(MPICC) 2>/dev/null),)
$(error MPI=1: $(MPICC) not found (install openmpi-bin libopenmpi-dev, or give MPI_CFLAGS= MPI_LIBS=))
endif
MPI_CFLAGS := $(shell $(MPICC) --showme:compile 2>/dev/null)
MPI_LIBS   := $(shell $(MPICC) --showme:link 2>/dev/null)
endif
MPI_SKIP := src/mpi/mpi_none.c
else
MPI_CFLAGS :=
MPI_LIBS   :=
MPI_SKIP := src/mpi/mpi.c
endif

LUA_PKG    := $(firstword $(foreach p,lua5.4 lua-5.4 lua54,$(shell $(PKG_CONFIG) --exists $(p) 2>/dev/null && echo $(p))))
LUA_CFLAGS ?= $(shell $(PKG_CONFIG) --cflags $(LUA_PKG) 2>/dev/null)
LUA_LIBS   ?= $(shell $(PKG_CONFIG) --libs $(LUA_PKG) 2>/dev/null)

CUDA_HOME  ?= $(patsubst %/bin/nvcc,%,$(shell command -v $(NVCC) 2>/dev/null))
# Hopper machine code plus PTX, so newer GPUs run it too.
CUDA_ARCH  ?= -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90

CFLAGS    ?= -O2 -g
NVCCFLAGS ?= -O3 -lineinfo
# No FMA contraction anywhere: the CPU and GPU backends must round identically.
ALL_CFLAGS = -std=c11 -Wall -Wextra -Werror -fPIC -fopenmp -ffp-contract=off -D_GNU_SOURCE \
             -Isrc -I$(BUILD)/gen $(LUA_CFLAGS) $(CFLAGS)
# Per-thread default streams: systems advanced on several host threads at once
# (carlo_advance_all: ensembles) queue on their own streams, so their kernels run side by side.
ALL_NVCCFLAGS = -std=c++17 $(CUDA_ARCH) -fmad=false --default-stream per-thread -Werror all-warnings \
             -Xcompiler -fPIC,-Wall,-Wextra,-Werror -Isrc $(LUA_CFLAGS) $(NVCCFLAGS)
LDLIBS     = $(LUA_LIBS) $(MPI_LIBS) -lz -lm -ldl -lpthread -fopenmp
CUDA_LIBS  = $(if $(filter 1,$(CUDA)),-L$(CUDA_HOME)/lib64 -L$(CUDA_HOME)/targets/x86_64-linux/lib \
             -lcudart_static -lrt -lstdc++)

LIB_C   := $(sort $(filter-out src/main.c $(MPI_SKIP),$(wildcard src/*.c src/*/*.c)))
LUA_SRC := $(sort $(wildcard lua/carlo/*.lua))
ifeq ($(CUDA),1)
CU_SRC  := $(sort $(wildcard cuda/*.cu))
LIB_OBJ := $(LIB_C:%.c=$(BUILD)/%.o) $(CU_SRC:%.cu=$(BUILD)/%.o)
else
LIB_OBJ := $(LIB_C:%.c=$(BUILD)/%.o) $(BUILD)/cuda/register_none.o
endif
LIB_OBJ += $(BUILD)/gen/lua_embed.o

# Lists of inputs, rewritten only when they change, so that adding, removing or renaming a
# source file rebuilds what depends on the set (timestamps alone would miss it).
LIST_DIR := $(BUILD)/gen
$(shell mkdir -p $(LIST_DIR); \
  echo '$(LUA_SRC)' | cmp -s - $(LIST_DIR)/lua.list || echo '$(LUA_SRC)' > $(LIST_DIR)/lua.list; \
  echo '$(LIB_OBJ)' | cmp -s - $(LIST_DIR)/obj.list || echo '$(LIB_OBJ)' > $(LIST_DIR)/obj.list)

UNIT_SRC := $(sort $(wildcard tests/unit/*.c))
UNIT_CXX := $(sort $(wildcard tests/unit/*.cc))
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/unit_%) $(UNIT_CXX:tests/unit/%.cc=$(BUILD)/tests/unit_%)
TEST_BIN := $(UNIT_BIN) $(BUILD)/tests/embed_host

.PHONY: all test test-gpu validate bench demo install clean deps sanitize
all: $(BUILD)/carlo $(BUILD)/carlo.so $(BUILD)/libcarlo.a

$(BUILD)/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -MMD -MP -c $< -o $@

# Only src/mpi/mpi.c includes <mpi.h>.
$(BUILD)/src/mpi/mpi.o: ALL_CFLAGS += $(MPI_CFLAGS)

$(BUILD)/cuda/%.o: cuda/%.cu
	@mkdir -p $(@D)
	$(NVCC) $(ALL_NVCCFLAGS) -MMD -MP -c $< -o $@

# The pure-Lua part of the module is compiled in, so carlo.so and the carlo command
# work wherever they are copied; lua/carlo is installed alongside for reading.
$(BUILD)/embed: scripts/embed.c
	@mkdir -p $(@D)
	$(CC) -std=c11 -O1 -Wall -Wextra -Werror $< -o $@
$(BUILD)/gen/lua_embed.c: $(LUA_SRC) $(LIST_DIR)/lua.list $(BUILD)/embed
	@mkdir -p $(@D)
	$(BUILD)/embed $@ $(LUA_SRC)
$(BUILD)/gen/lua_embed.o: $(BUILD)/gen/lua_embed.c
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(BUILD)/libcarlo.a: $(LIB_OBJ) $(LIST_DIR)/obj.list
	@rm -f $@
	$(AR) rcs $@ $(LIB_OBJ)

$(BUILD)/carlo: $(BUILD)/src/main.o $(BUILD)/libcarlo.a
	$(CC) $(LDFLAGS) -Wl,-E -o $@ $< $(BUILD)/libcarlo.a $(CUDA_LIBS) $(LDLIBS)

# The Lua module: Lua's own symbols come from the interpreter that loads it.
$(BUILD)/carlo.so: $(LIB_OBJ) $(LIST_DIR)/obj.list
	$(CC) $(LDFLAGS) -shared -o $@ $(LIB_OBJ) $(CUDA_LIBS) $(MPI_LIBS) -lz -lm -ldl -lpthread -fopenmp

$(BUILD)/tests/unit_%: tests/unit/%.c $(BUILD)/libcarlo.a
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -MMD -MP $(LDFLAGS) -Itests -o $@ $< $(BUILD)/libcarlo.a $(CUDA_LIBS) $(LDLIBS)

# C++ unit tests: GPU kernels compiled for the host (tests/unit/kmc_warp.cc, shape_warp.cc)
$(BUILD)/tests/unit_%: tests/unit/%.cc $(BUILD)/libcarlo.a
	@mkdir -p $(@D)
	$(CXX) -std=c++17 -Wall -Wextra -Werror -ffp-contract=off -fopenmp -pthread -D_GNU_SOURCE -MMD -MP \
	    -Isrc -Icuda -Itests $(LUA_CFLAGS) $(CFLAGS) -o $@ $< $(BUILD)/libcarlo.a $(CUDA_LIBS) $(LDLIBS)

$(BUILD)/tests/embed_host: tests/embed/host.c $(BUILD)/libcarlo.a
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/libcarlo.a $(CUDA_LIBS) $(LDLIBS)

# The libFuzzer target for the trajectory reader, with ASan and UBSan (make validate runs it
# through tests/validation/traj_fuzz.sh): clang, with its libFuzzer runtime.
FUZZ_CC ?= $(firstword $(foreach c,clang clang-14,$(shell command -v $(c) 2>/dev/null)))
TRAJ_FUZZ_SRC := tests/fuzz/traj_fuzz.c src/traj/traj.c src/traj/traj_read.c src/traj/traj_write.c \
             src/traj/codec.c src/traj/pool.c \
             src/traj/checkpoint.c src/core/error.c src/core/frame.c src/core/array.c src/core/progress.c
$(BUILD)/fuzz/traj_fuzz: $(TRAJ_FUZZ_SRC) $(wildcard src/traj/*.h src/core/*.h)
	@mkdir -p $(@D)
	$(FUZZ_CC) -std=c11 -g -O1 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined \
	    -fno-sanitize-recover=undefined -Isrc $(LUA_CFLAGS) $(TRAJ_FUZZ_SRC) -o $@ \
	    $(LUA_LIBS) -lz -lm -lpthread

test: all $(TEST_BIN)
	@BUILD=$(BUILD) tests/run unit lua gpu mpi

test-gpu: all $(TEST_BIN)
	@BUILD=$(BUILD) CARLO_REQUIRE_GPU=1 tests/run gpu

validate: all $(TEST_BIN)
	@BUILD=$(BUILD) tests/run validation

# The unit and Lua tests under AddressSanitizer and UndefinedBehaviorSanitizer (CPU build).
# Every finding stops the program and fails its test: UBSan's too, which would otherwise only
# print (-fno-sanitize-recover), and ASan's after the first report (halt_on_error).
SANITIZE = -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
SANITIZE_ENV = ASAN_OPTIONS=halt_on_error=1:detect_leaks=1:strict_string_checks=1 \
               UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
sanitize:
	@$(MAKE) --no-print-directory CUDA=0 MPI=0 BUILD=$(BUILD)/sanitize CFLAGS="-O1 -g $(SANITIZE)" \
	    LDFLAGS="$(SANITIZE)" all $(TEST_BIN:$(BUILD)/%=$(BUILD)/sanitize/%)
	@BUILD=$(BUILD)/sanitize CARLO_SANITIZED=1 CARLO_SANITIZE_FLAGS="$(SANITIZE)" $(SANITIZE_ENV) \
	    tests/run unit lua

bench: all
	@$(BUILD)/carlo scripts/bench.lua

deps:
	@scripts/install-deps

# The main demonstration: installs what is missing, builds, runs the quickstart.
demo:
	@scripts/install-deps --check-only >/dev/null 2>&1 || scripts/install-deps
	@$(MAKE) --no-print-directory all
	@$(BUILD)/carlo workflows/quickstart.lua out=$(BUILD)/quickstart

# carlo.pc, for host programs: cc host.c $(pkg-config --cflags --libs carlo). It lists what
# libcarlo.a needs as this build made it: Lua, zlib and OpenMP, the CUDA runtime for a CUDA
# build, the sanitizers for make sanitize's. Rewritten at every install (PREFIX may change).
VERSION := $(shell sed -n 's/^\#define CARLO_VERSION "\(.*\)"/\1/p' src/runtime.c)
.PHONY: $(BUILD)/carlo.pc
$(BUILD)/carlo.pc: carlo.pc.in
	@mkdir -p $(@D)
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' \
	    -e 's|@CFLAGS@|$(strip $(LUA_CFLAGS))|' \
	    -e 's|@LIBS@|$(strip $(CUDA_LIBS) $(LDLIBS) $(LDFLAGS))|' $< > $@

install: all $(BUILD)/carlo.pc
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include \
	    $(DESTDIR)$(PREFIX)/lib/pkgconfig \
	    $(DESTDIR)$(PREFIX)/lib/lua/5.4 $(DESTDIR)$(PREFIX)/share/lua/5.4/carlo \
	    $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/man/man3 \
	    $(DESTDIR)$(PREFIX)/share/man/man5 $(DESTDIR)$(PREFIX)/share/man/man7
	install -m 755 $(BUILD)/carlo $(DESTDIR)$(PREFIX)/bin/carlo
	install -m 644 $(BUILD)/libcarlo.a $(DESTDIR)$(PREFIX)/lib/libcarlo.a
	install -m 644 src/carlo.h $(DESTDIR)$(PREFIX)/include/carlo.h
	install -m 644 $(BUILD)/carlo.pc $(DESTDIR)$(PREFIX)/lib/pkgconfig/carlo.pc
	install -m 755 $(BUILD)/carlo.so $(DESTDIR)$(PREFIX)/lib/lua/5.4/carlo.so
	install -m 644 $(LUA_SRC) $(DESTDIR)$(PREFIX)/share/lua/5.4/carlo/
	for m in man/*.[1357]; do \
	    install -m 644 $$m $(DESTDIR)$(PREFIX)/share/man/man$${m##*.}/; done

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
