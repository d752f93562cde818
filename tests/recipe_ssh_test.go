package tests

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// The fan-out across machines (scripts/fanout.sh's header: GNU parallel
// --sshlogin, one shard per host) run for real: an OpenSSH server of the
// test's own on a loopback port, two logins to it standing for two machines,
// each with its own copy of the prompts and its own data directory, each
// running its shard against the same llm-sim.

// sshMachines are the host names of the two "machines" in sshTestbed's
// client configuration.
var sshMachines = []string{"machine1", "machine2"}

// sshTestbed starts sshd on 127.0.0.1 with a host key and an authorized user
// key made for the test, logins for the current user (root included) by key
// only, from 127.0.0.1 only, and its own configuration file: nothing of the
// system's sshd is read or changed. It returns an ssh client configuration
// file in which each of sshMachines logs in with SYNTHPIPE_DATA set to
// dataDirs[i]. The test's cleanup stops sshd.
func sshTestbed(t *testing.T, dataDirs []string) string {
	t.Helper()
	sshd, err := exec.LookPath("sshd")
	if err != nil {
		sshd, err = exec.LookPath("/usr/sbin/sshd")
	}
	if err != nil {
		t.Skip("sshd is not installed (Debian: openssh-server; scripts/ensure-test-deps.sh installs it when run as root, as make test does): the fan-out across machines is not tested")
	}
	for _, tool := range []string{"ssh", "ssh-keygen"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed (Debian: openssh-client; scripts/ensure-test-deps.sh installs it when run as root): the fan-out across machines is not tested", tool)
		}
	}
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		// sshd running as root confines its pre-authentication child to
		// this empty directory; Debian's service creates it at boot.
		if _, err := os.Stat("/run/sshd"); errors.Is(err, os.ErrNotExist) {
			if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
				t.Fatalf("sshd's privilege separation directory: %v", err)
			}
			t.Cleanup(func() { os.Remove("/run/sshd") })
		}
	}

	dir := t.TempDir()
	path := func(name string) string { return filepath.Join(dir, name) }
	for _, key := range []string{"host_key", "user_key"} {
		if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "synthpipe-test-"+key, "-f", path(key)).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen %s: %v\n%s", key, err, out)
		}
	}
	userPub, err := os.ReadFile(path("user_key.pub"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, path("authorized_keys"), string(userPub), 0o600)
	port := freeLoopbackPort(t)
	// StrictModes no: the key files live in the test's temporary directory,
	// under a world-writable /tmp, which StrictModes refuses however the
	// files themselves are kept; who may log in stays fixed by the key, the
	// user and the address below.
	writeFile(t, path("sshd_config"), fmt.Sprintf(`# synthpipe test sshd: loopback only, one user, by key only
Port %d
ListenAddress 127.0.0.1
HostKey %s
PidFile %s
AuthorizedKeysFile %s
AuthenticationMethods publickey
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
AllowUsers %s@127.0.0.1
UsePAM no
StrictModes no
PermitUserEnvironment no
AcceptEnv SYNTHPIPE_DATA
AllowTcpForwarding no
AllowAgentForwarding no
X11Forwarding no
PermitTTY no
PrintMotd no
LogLevel ERROR
`, port, path("host_key"), path("sshd.pid"), path("authorized_keys"), me.Username), 0o600)
	if out, err := exec.Command(sshd, "-t", "-f", path("sshd_config")).CombinedOutput(); err != nil {
		t.Fatalf("sshd -t refuses the test's configuration: %v\n%s", err, out)
	}

	cmd := exec.Command(sshd, "-D", "-e", "-f", path("sshd_config"))
	logFile, err := os.Create(path("sshd.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close() // sshd has its own copy
	cmd.Stderr = logFile
	sshdLog := func() string { b, _ := os.ReadFile(path("sshd.log")); return tail(string(b), 3000) }
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	startServer(t, cmd, "sshd", "listen on "+addr, sshdLog, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})

	hostPub, err := os.ReadFile(path("host_key.pub"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, path("known_hosts"), fmt.Sprintf("[127.0.0.1]:%d %s", port, hostPub), 0o600)
	var cfg strings.Builder
	for i, m := range sshMachines {
		fmt.Fprintf(&cfg, "Host %s\n  SetEnv SYNTHPIPE_DATA=%s\n", m, dataDirs[i])
	}
	fmt.Fprintf(&cfg, `Host *
  HostName 127.0.0.1
  Port %d
  User %s
  IdentityFile %s
  IdentitiesOnly yes
  UserKnownHostsFile %s
  GlobalKnownHostsFile /dev/null
  StrictHostKeyChecking yes
  BatchMode yes
  ControlMaster no
  ConnectTimeout 30
  ServerAliveInterval 5
  ServerAliveCountMax 6
  LogLevel ERROR
`, port, me.Username, path("user_key"), path("known_hosts"))
	writeFile(t, path("ssh_config"), cfg.String(), 0o600)
	for i, m := range sshMachines {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		out, err := exec.CommandContext(ctx, "ssh", "-F", path("ssh_config"), m, "echo $SYNTHPIPE_DATA").CombinedOutput()
		cancel()
		if err != nil || strings.TrimSpace(string(out)) != dataDirs[i] {
			t.Fatalf("ssh %s: %v: %s\nsshd:\n%s", m, err, out, sshdLog())
		}
	}
	return path("ssh_config")
}

func freeLoopbackPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func writeFile(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

// TestRecipeFanoutAcrossMachines runs the fan-out of scripts/fanout.sh's
// header, one shard per host with GNU parallel --sshlogin, against two
// logins to the test's sshd: each machine writes its shard in its own data
// directory, both against the same llm-sim, sharing it; the shards
// gathered hold what one unsharded run writes, answer for answer.
func TestRecipeFanoutAcrossMachines(t *testing.T) {
	t.Parallel()
	requireTools(t, recipeTools...)
	requireGNUParallel(t)
	url := startLLMSim(t)
	local := recipeData(t, "chat")
	mustRunRecipe(t, recipeEnv(local, url), "run-dataset.sh", "chat")
	whole := readRecipeOutput(t, filepath.Join(local, "chat", "out.jsonl"))

	machines := []string{recipeData(t, "chat"), recipeData(t, "chat")} // the prompts installed on each
	sshConfig := sshTestbed(t, machines)
	script, err := filepath.Abs(filepath.Join("..", "scripts", "run-dataset.sh"))
	if err != nil {
		t.Fatal(err)
	}
	// Every setting but SYNTHPIPE_DATA, which each login sets for itself,
	// goes along with the job (--env); PATH finds the tools under test.
	env := recipeEnv("unused", url)[1:]
	args := []string{"--ssh", "ssh -F " + sshConfig, "--sshlogin", "1/" + sshMachines[0] + ",1/" + sshMachines[1],
		"--env", "PATH", "--tag", "--line-buffer", "--halt", "never"}
	for _, kv := range env {
		args = append(args, "--env", strings.SplitN(kv, "=", 2)[0])
	}
	args = append(args, script, "chat", "{}/2", ":::", "0", "1")
	code, stdout, stderr := runTool(t, recipeTimeout, env, nil, "parallel", args...)
	if code != 0 {
		t.Fatalf("parallel --sshlogin: exit %d\n%s%s", code, stdout, tail(string(stderr), 3000))
	}

	var shards []string
	for i, data := range machines {
		found, err := filepath.Glob(filepath.Join(data, "chat", "out.shard-*-of-2.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		if len(found) != 1 {
			t.Errorf("%s wrote %d shard files, want 1 (one shard per machine): %v", sshMachines[i], len(found), found)
		}
		shards = append(shards, found...)
		// Whether its generate says it shares the server depends on
		// whether it saw the other's requests there (lib/generate's
		// TestSaysItSharesOnlyBesideAnotherRun); the log is whole.
		checkLog(t, filepath.Join(data, "chat", "run.log"))
	}
	union := readRecipeOutput(t, shards...) // fails on an id in two shards
	if !reflect.DeepEqual(sortedKeys(union), sortedKeys(whole)) {
		t.Fatalf("the machines' shards hold %d ids, the unsharded run %d: they should be the same", len(union), len(whole))
	}
	for id, r := range whole {
		if !reflect.DeepEqual(union[id].OutputIDs, r.OutputIDs) {
			t.Errorf("%s: the shard's output_ids differ from the unsharded run's", id)
		}
		if union[id].Gen.Endpoint != r.Gen.Endpoint {
			t.Errorf("%s: answered by %s, not the one simulator %s", id, union[id].Gen.Endpoint, r.Gen.Endpoint)
		}
	}
}
