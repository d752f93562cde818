#!/usr/bin/env bash
# ensure-test-deps.sh: make sure the programs the tests run beside Go are
# installed: GNU parallel (the fan-out recipe, scripts/fanout.sh), flock (the
# cron recipe, scripts/run-dataset.sh) and OpenSSH's server and client (the
# fan-out across machines, parallel --sshlogin, is tested against an sshd the
# test starts on a loopback port), jq (some test scripts read JSON
# output with it), Slurm with munge (the job array of scripts/slurm/ is
# tested on a one-node cluster the test starts), chromium (tokstat
# --html's page is loaded in it, headless) and Node.js with npm (to-train's
# Parquet output is read back by parquet-wasm, an implementation independent
# of synthpipe's). make test runs it first, so that `make test` works on a
# fresh Debian or Ubuntu machine. As root it installs what is missing with
# apt-get; otherwise it says what to install and fails. Then it installs the
# pinned npm packages of scripts/parquet-fixtures/package.json beside it
# (node_modules, not committed), once.
set -euo pipefail

# sshd, munged and the Slurm daemons live in sbin, which a user's PATH may lack.
PATH=$PATH:/usr/sbin:/sbin

# program -> the Debian package that provides it
declare -A package_of=([parallel]=parallel [flock]=util-linux [sshd]=openssh-server [ssh]=openssh-client [ssh-keygen]=openssh-client [jq]=jq
	[slurmctld]=slurm-wlm [slurmd]=slurm-wlm [sbatch]=slurm-wlm [munged]=munge [chromium]=chromium
	[node]=nodejs [npm]=npm)

# missing_packages prints the packages whose programs are not on PATH.
missing_packages() {
	local program
	for program in "${!package_of[@]}"; do
		command -v "$program" >/dev/null 2>&1 || echo "${package_of[$program]}"
	done | sort -u
}

mapfile -t missing < <(missing_packages)
# moreutils also ships a program called parallel, which takes other arguments.
if command -v parallel >/dev/null 2>&1 && ! parallel --version 2>/dev/null | grep -q '^GNU parallel'; then
	echo "ensure-test-deps: $(command -v parallel) is not GNU parallel (moreutils' has the same name): install Debian's package parallel, which replaces it" >&2
	exit 1
fi

# install_npm_packages installs the pinned parquet-wasm and apache-arrow the
# Parquet read-back test runs, unless they are there already.
install_npm_packages() {
	local dir
	dir=$(cd "$(dirname "$0")/parquet-fixtures" && pwd)
	[ -f "$dir/node_modules/parquet-wasm/package.json" ] && [ -f "$dir/node_modules/apache-arrow/package.json" ] && return 0
	echo "ensure-test-deps: installing the npm packages of $dir/package.json (the Parquet read-back test needs them)"
	if ! (cd "$dir" && npm install --no-audit --no-fund --no-save --silent >/dev/null); then
		echo "ensure-test-deps: npm install in $dir failed (see above): the npm registry must be reachable; run it by hand and make test again" >&2
		exit 1
	fi
}

if [ ${#missing[@]} -eq 0 ]; then
	install_npm_packages
	exit 0
fi

if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
	echo "ensure-test-deps: the tests need these packages, not installed: ${missing[*]}; this script installs them only as root with apt-get: run 'sudo apt-get install ${missing[*]}' (or your system's equivalent) and try again" >&2
	exit 1
fi
echo "ensure-test-deps: installing ${missing[*]} with apt-get (the tests need it)"
export DEBIAN_FRONTEND=noninteractive
apt_failed() {
	echo "ensure-test-deps: apt-get $1 failed (see above; if another apt or unattended-upgrades held its lock for ten minutes, wait for it to end): install ${missing[*]} by hand and run make test again" >&2
	exit 1
}
# Another apt-get (unattended upgrades at a fresh machine's boot) may hold
# apt's and dpkg's locks for a while: both steps wait for them, up to ten
# minutes (apt-get reads DPkg::Lock::Timeout for the lists' lock too).
apt-get update -qq -o DPkg::Lock::Timeout=600 || apt_failed update
apt-get install -y -qq -o DPkg::Lock::Timeout=600 --no-install-recommends "${missing[@]}" || apt_failed install
if [ -n "$(missing_packages)" ]; then
	echo "ensure-test-deps: apt-get installed ${missing[*]}, yet $(missing_packages | tr '\n' ' ')is still not on PATH ($PATH)" >&2
	exit 1
fi
echo "ensure-test-deps: installed ${missing[*]}"
install_npm_packages
