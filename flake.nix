{
  # The Netstick environment pinned with Nix: `nix develop` gives the tools that
  # workflow/setup.sh otherwise installs from apt (setup.sh sees NETSTICK_NIX and skips apt,
  # uses the shell's Go and builds .venv from the pinned requirements*.txt with the shell's
  # Python); `nix run` runs the quick campaign from a checkout (`make run`);
  # `nix build .#netstick-ref` / `.#netemu` build the Go programs.
  description = "Netstick: reproducible benchmarks of game-networking libraries";

  # One nixpkgs commit (its Go is 1.26.8, go.mod's version); flake.lock records its hash.
  # Every attribute read below is listed in tests/nix/nixpkgs-attributes.txt with the file
  # that defines it at this commit.
  inputs.nixpkgs.url = "github:NixOS/nixpkgs/02ed1649d8816e22e48d81628b5daeadf37e20c6";

  outputs = { self, nixpkgs }:
    let
      lib = nixpkgs.lib;
      systems = [ "x86_64-linux" "aarch64-linux" ];
      forAll = f: lib.genAttrs systems (system: f nixpkgs.legacyPackages.${system});

      # The tools of `make run` and `make test` (workflow/setup.sh's Debian lists).
      shellPackages = pkgs: [
        pkgs.go_1_26
        pkgs.pkg-config
        pkgs.enet
        pkgs.gcc
        pkgs.gnumake
        pkgs.git
        pkgs.curl
        pkgs.unzip
        pkgs.procps
        pkgs.iproute2
        pkgs.ethtool
        # .venv is built from requirements*.txt by setup.sh (PyPI pins, like every other
        # machine); Snakemake and its SLURM executor plugin come from there.
        pkgs.python311
        # the report: Quarto, R with the figures' packages, the PDF's page images
        pkgs.quarto
        (pkgs.rWrapper.override {
          packages = with pkgs.rPackages; [ ggplot2 knitr rmarkdown data_table jsonlite ];
        })
        pkgs.poppler-utils
        # prototypes: the Unity/.NET ones run on mono, the browser ones in chromium
        pkgs.mono
        pkgs.chromium
      ];

      goProgram = pkgs: { pname, dir, subPackages, vendorHash, extra ? { } }:
        pkgs.buildGo126Module ({
          inherit pname subPackages;
          version = self.shortRev or "dirty";
          src = lib.cleanSource (self + "/${dir}");
          inherit vendorHash;
          ldflags = [ "-s" "-w" ];
          doCheck = false;
        } // extra);
    in
    {
      packages = forAll (pkgs: rec {
        # The reference prototype, with libenet through cgo (its enet transport).
        netstick-ref = goProgram pkgs {
          pname = "netstick-ref";
          dir = "prototypes/reference";
          subPackages = [ "cmd/netstick-ref" ];
          # NAR hash of `go mod vendor`'s output for go.mod/go.sum;
          # tests/python/e2e/toolchain/test_flake_eval.py recomputes it (and prints the new one
          # after a go.mod change).
          vendorHash = "sha256-AyDjVEw6BsDO8elEIWVuquBNIJy17H3CequAYSSI/hU=";
          extra = {
            nativeBuildInputs = [ pkgs.pkg-config ];
            buildInputs = [ pkgs.enet ];
          };
        };
        netemu = goProgram pkgs {
          pname = "netemu";
          dir = "workflow/harness/netemu";
          subPackages = [ "." ];
          vendorHash = "sha256-Bqs0iBvdK7BeEPf1CuoyHFmFPpXuChAJLqaCW3wi35E=";
        };
        default = netstick-ref;
      });

      devShells = forAll (pkgs: {
        default = pkgs.mkShell {
          packages = shellPackages pkgs;
          # setup.sh: no apt, the shell's Go, never a downloaded toolchain.
          NETSTICK_NIX = "1";
          GOTOOLCHAIN = "local";
          # PyPI's manylinux wheels in .venv (numpy, polars, ...) load libstdc++ and zlib
          # from the system, which NixOS does not have in /usr/lib.
          LD_LIBRARY_PATH = lib.makeLibraryPath [ pkgs.stdenv.cc.cc.lib pkgs.zlib ];
          shellHook = ''
            echo "netstick dev shell: make run | make test (workflow/setup.sh builds .venv on first use)"
          '';
        };
      });

      apps = forAll (pkgs: {
        # From a checkout (the working directory): setup, build, the quick campaign and its
        # report, with the dev shell's tools on PATH.
        default = {
          type = "app";
          program = toString (pkgs.writeShellScript "netstick-run" ''
            export PATH=${lib.makeBinPath (shellPackages pkgs)}:$PATH
            export NETSTICK_NIX=1 GOTOOLCHAIN=local
            test -f Snakefile || { echo "netstick: run from a Netstick checkout (Snakefile not found)" >&2; exit 2; }
            exec make run CAMPAIGN="''${CAMPAIGN:-quick}"
          '');
        };
      });
    };
}
