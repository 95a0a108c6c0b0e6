# Evaluates flake.nix's outputs without nixpkgs: `lib` is nixpkgs.lib when given (a path to
# nixpkgs' lib directory), otherwise a stand-in with the few functions the flake calls; the
# package set holds exactly the attributes of nixpkgs-attributes.txt, so reading any other
# attribute fails the evaluation. Prints a summary that
# tests/python/e2e/toolchain/test_flake_eval.py checks.
{ libPath ? null }:
let
  lines = builtins.filter (l: builtins.isString l && l != "" && builtins.substring 0 1 l != "#")
    (builtins.split "\n" (builtins.readFile ./nixpkgs-attributes.txt));
  names = map (l: builtins.head (builtins.split " " l)) lines;
  standInLib = {
    genAttrs = ns: f: builtins.listToAttrs (map (n: { name = n; value = f n; }) ns);
    cleanSource = src: src;
    makeLibraryPath = ps: builtins.concatStringsSep ":" (map (p: "${p}/lib") ps);
    makeBinPath = ps: builtins.concatStringsSep ":" (map (p: "${p}/bin") ps);
  };
  lib = if libPath == null then standInLib else import libPath;
  drv = name: { type = "derivation"; inherit name; outPath = "/nix/store/00000000000000000000000000000000-${name}"; };
  plain = builtins.filter (n: builtins.match "rPackages\\..*" n == null) names;
  rNames = map (n: builtins.substring 10 100 n) (builtins.filter (n: builtins.match "rPackages\\..*" n != null) names);
  # The functions among the attributes behave like nixpkgs' (returning their arguments).
  functions = {
    mkShell = attrs: attrs // { type = "derivation"; name = "shell"; };
    buildGo126Module = attrs: attrs // { type = "derivation"; name = attrs.pname; };
    writeShellScript = name: text: (drv name) // { inherit text; };
    stdenv = (drv "stdenv") // { cc.cc.lib = drv "libstdc++"; };
    rWrapper = (drv "R") // { override = args: (drv "R-wrapped") // { rPackageNames = map (p: p.name) args.packages; }; };
  };
  pkgs = builtins.listToAttrs (map (n: { name = n; value = functions.${n} or (drv n); }) plain)
    // { rPackages = builtins.listToAttrs (map (n: { name = n; value = drv n; }) rNames); };
  nixpkgs = { inherit lib; legacyPackages = lib.genAttrs [ "x86_64-linux" "aarch64-linux" ] (_: pkgs); };
  flake = import ../../flake.nix;
  self = outputs // { outPath = toString ../..; shortRev = "0000000"; };
  outputs = flake.outputs { inherit self nixpkgs; };
  pkgSummary = p: { inherit (p) pname subPackages vendorHash version; src = toString p.src; buildInputs = map (d: d.name) (p.buildInputs or [ ]); };
in
{
  inputs = flake.inputs;
  description = flake.description;
  systems = builtins.attrNames outputs.packages;
  packages = builtins.mapAttrs (_: ps: builtins.mapAttrs (_: pkgSummary) ps) outputs.packages;
  shell = builtins.mapAttrs (_: s: {
    packages = map (p: p.name) s.default.packages;
    rPackages = builtins.concatLists (map (p: p.rPackageNames or [ ]) s.default.packages);
    inherit (s.default) NETSTICK_NIX GOTOOLCHAIN LD_LIBRARY_PATH;
  }) outputs.devShells;
  apps = builtins.mapAttrs (_: a: { inherit (a.default) type; script = a.default.program; }) outputs.apps;
}
