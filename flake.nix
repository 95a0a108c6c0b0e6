{
  # The Netstick environment pinned with Nix: `nix develop` gives the tools that
  # workflow/setup.sh otherwise installs from apt, the Go module proxy and PyPI;
  # `nix run` runs the default experiment (`make run`).
  description = "Netstick: reproducible benchmarks of game-networking libraries";

  inputs.nixpkgs.url = "github:NixOS/nixpkgs/nixos-26.05";

  outputs = { self, nixpkgs }:
    let
      systems = [ "x86_64-linux" "aarch64-linux" ];
      forAll = f: nixpkgs.lib.genAttrs systems (system: f nixpkgs.legacyPackages.${system});
    in
    {
      devShells = forAll (pkgs: {
        default = pkgs.mkShell {
          packages = [
            pkgs.go_1_26
            pkgs.pkg-config
            pkgs.enet
            pkgs.gcc
            pkgs.gnumake
            pkgs.procps
            (pkgs.python311.withPackages (ps: [ ps.psutil ps.numpy ps.pytest ]))
            pkgs.ruff
            # the report: Quarto (renders report/*.qmd itself), R with the figures' packages,
            # and the tools that look at the result
            pkgs.quarto
            (pkgs.rWrapper.override {
              packages = with pkgs.rPackages; [ ggplot2 knitr rmarkdown data_table jsonlite ];
            })
            pkgs.chromium
            pkgs.poppler_utils
          ];
          # Use the toolchain from the shell, never download another one.
          GOTOOLCHAIN = "local";
          shellHook = ''
            echo "netstick dev shell: make run | make test | make bench-prototypes"
          '';
        };
      });

      apps = forAll (pkgs: {
        default = {
          type = "app";
          program = toString (pkgs.writeShellScript "netstick-run" ''
            exec ${pkgs.gnumake}/bin/make run
          '');
        };
      });
    };
}
