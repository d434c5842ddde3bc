# Makefile: install portd and portctl as a system service, and package them.
#
#   make                  release build of portd, portctl and, when the
#                         package has it, portd-bridge (Swift runtime
#                         linked statically, glibc dynamically)
#   make install          install under $(DESTDIR)$(PREFIX) (see README, Install)
#   make uninstall        remove exactly what make install recorded
#   make install-list     print where make install puts each file (builds nothing)
#   make deb              a Debian package in .build-deb/ (scripts/build-deb),
#                         after checking that Debian's packaging tools are there
#   make check-install    what CI checks of all of this (scripts/check-install)
#
# PREFIX defaults to /usr/local. The configuration stays in /etc/portd
# (SYSCONFDIR), where portd reads it whatever PREFIX is. The unit
# directories are pkg-config's (systemd.pc), under PREFIX when PREFIX is not
# systemd's own prefix. Every directory can be overridden on the command line.
# The build has its own scratch path (.build-install), so that it does not
# rebuild, with other flags, the .build/ that swift build and the tests use.

PREFIX ?= /usr/local
DESTDIR ?=
BINDIR ?= $(PREFIX)/bin
DATADIR ?= $(PREFIX)/share
MANDIR ?= $(DATADIR)/man
DOCDIR ?= $(DATADIR)/doc/portd
SYSCONFDIR ?= /etc
MANIFEST ?= $(DATADIR)/portd/install-manifest
STRIP ?= strip
SWIFT ?= swift

# pkg-config's unit directories; under PREFIX unless PREFIX is systemd's.
SYSTEMD_PREFIX := $(shell pkg-config --variable=prefix systemd 2>/dev/null)
ifeq ($(PREFIX),$(SYSTEMD_PREFIX))
SYSTEMD_DEFINES :=
else
SYSTEMD_DEFINES := --define-variable=prefix=$(PREFIX) --define-variable=root_prefix=$(PREFIX)
endif
SYSTEMDSYSTEMUNITDIR ?= $(or $(shell pkg-config $(SYSTEMD_DEFINES) --variable=systemdsystemunitdir systemd 2>/dev/null),$(PREFIX)/lib/systemd/system)
SYSTEMDUSERUNITDIR ?= $(or $(shell pkg-config $(SYSTEMD_DEFINES) --variable=systemduserunitdir systemd 2>/dev/null),$(PREFIX)/lib/systemd/user)
BASHCOMPDIR ?= $(DATADIR)/bash-completion/completions
ZSHCOMPDIR ?= $(DATADIR)/zsh/site-functions
FISHCOMPDIR ?= $(DATADIR)/fish/vendor_completions.d
SYSUSERSDIR ?= $(or $(shell pkg-config $(SYSTEMD_DEFINES) --variable=sysusersdir systemd 2>/dev/null),$(PREFIX)/lib/sysusers.d)
# portd-bridge(8), built and installed with the rest once Package.swift declares it.
BRIDGE := $(if $(shell grep -s 'name: "portd-bridge"' Package.swift),portd-bridge)

# --static-swift-stdlib: the Swift runtime and Foundation inside the binary,
# glibc (and libsystemd for portd) dynamic; docs/BENCHMARKS.md, "Installed
# binaries", says why not -static-executable. lld: gold prints glibc's
# link-time note on mktemp(3) (a .gnu.warning section), referenced by the
# static FoundationEssentials, not by this project's code; lld does not
# print such notes, and the build has no other warning. -z now: every symbol
# bound at start (full RELRO with lld's default -z relro).
# What a process costs at start (docs/BENCHMARKS.md, "portctl's start-up,
# counted"; a portctl send within dbus-send's cost, issue 13):
#   - libstdc++ and libgcc linked statically (the Swift runtime's C++
#     library; GCC's runtime library exception allows it): the dynamic
#     loader then maps no libstdc++.so and resolves none of its thousands of
#     symbols, 1.7 M instructions of a 4.3 M-instruction send. The toolchain's
#     link arguments ask for -lstdc++, so a directory holding only
#     libstdc++.a (STATIC_CXX_DIR) comes first in the library path;
#   - --no-export-dynamic: the toolchain exports every symbol of the program
#     (-export-dynamic), whose table the Swift runtime's start then searches
#     linearly (dladdr, for its backtracer's path): 0.15 M instructions;
#   - -z pack-relative-relocs: the 43,000 relative relocations of a
#     position-independent executable as RELR (glibc 2.36), 0.19 M fewer;
#   - -disable-concrete-type-metadata-mangled-name-accessors (a frontend
#     flag, for every module of the build): the metadata of a concrete
#     generic type through its accessor, not found at run time from its
#     mangled name, which checks its generic requirements by scanning the
#     protocol conformance records: 0.6 M instructions of a send.
STATIC_CXX_DIR = $(CURDIR)/.build-install/static-cxx
LIBSTDCXX_A := $(shell $(CC) -print-file-name=libstdc++.a 2>/dev/null)
SWIFT_BUILD = $(SWIFT) build -c release --static-swift-stdlib -Xswiftc -use-ld=lld -Xlinker -z -Xlinker now \
	-Xswiftc -L$(STATIC_CXX_DIR) -Xswiftc -Xclang-linker -Xswiftc -static-libgcc -Xlinker --no-export-dynamic \
	-Xlinker -z -Xlinker pack-relative-relocs \
	-Xswiftc -Xfrontend -Xswiftc -disable-concrete-type-metadata-mangled-name-accessors \
	--scratch-path .build-install
BUILDDIR = $(CURDIR)/.build-install/release

export DESTDIR PREFIX BINDIR MANDIR DOCDIR SYSCONFDIR MANIFEST STRIP BUILDDIR
export SYSTEMDSYSTEMUNITDIR SYSTEMDUSERUNITDIR BASHCOMPDIR ZSHCOMPDIR FISHCOMPDIR SYSUSERSDIR

.PHONY: all build install install-files install-list uninstall deb check-install clean

all: build

build: $(STATIC_CXX_DIR)/libstdc++.a
	$(SWIFT_BUILD) --product portd
	$(SWIFT_BUILD) --product portctl
	$(if $(BRIDGE),$(SWIFT_BUILD) --product portd-bridge)

$(STATIC_CXX_DIR)/libstdc++.a:
	@case "$(LIBSTDCXX_A)" in /*) ;; *) echo "make: libstdc++.a not found ($(CC) -print-file-name=libstdc++.a)" >&2; exit 1 ;; esac
	mkdir -p $(STATIC_CXX_DIR)
	ln -sf $(LIBSTDCXX_A) $@

# install builds first where swift is on PATH; under sudo, whose PATH often
# lacks the toolchain, it installs what `make` built.
install: $(if $(shell command -v $(SWIFT) 2>/dev/null),build) install-files

# install-files: install what is built, without building (make deb uses it).
install-files:
	scripts/install-tree install

install-list:
	@scripts/install-tree list

uninstall:
	scripts/install-tree uninstall

# deb checks the packaging tools first (scripts/build-deb --check-build-deps
# names what is missing), then builds.
deb:
	scripts/build-deb --check-build-deps
	$(MAKE) --no-print-directory build
	scripts/build-deb

check-install:
	scripts/check-install

clean:
	rm -rf .build-install .build-deb
