package tests

import (
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/synthpipe/synthpipe/lib/statusfile"
)

// The Slurm recipe (scripts/slurm/) run for real: a Slurm cluster of one
// node on this machine, munged, slurmctld and slurmd started by the test as
// root with a configuration of its own in a temporary folder (its own munge
// key and socket, its own ports, no cgroups), nothing of the system's Slurm
// or munge read or changed.

// slurmPrograms are what the cluster needs: Debian's slurm-wlm and munge,
// which scripts/ensure-test-deps.sh installs.
var slurmPrograms = []string{"munged", "slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "scancel", "sinfo"}

// slurmCluster is a running test cluster; env points the Slurm commands
// (and the jobs, which inherit it) at it.
type slurmCluster struct {
	t   *testing.T
	dir string
	env []string
}

// requireSlurm skips the test where Slurm cannot be had (not root, or no
// apt-get to install it with) and fails it where it could have been.
func requireSlurm(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the Slurm test starts munged, slurmctld and slurmd, which need root: run make test as root")
	}
	os.Setenv("PATH", os.Getenv("PATH")+":/usr/sbin:/sbin")
	for _, p := range slurmPrograms {
		if _, err := exec.LookPath(p); err != nil {
			if _, aptErr := exec.LookPath("apt-get"); aptErr != nil {
				t.Skipf("%s is not installed and there is no apt-get to install Debian's slurm-wlm and munge with: the Slurm recipe is not tested", p)
			}
			t.Fatalf("%s is not installed: run scripts/ensure-test-deps.sh (make test does), which installs slurm-wlm and munge", p)
		}
	}
}

// startSlurm starts a one-node cluster and returns it; the test's cleanup
// cancels its jobs, stops its daemons and kills whatever they left.
func startSlurm(t *testing.T) *slurmCluster {
	t.Helper()
	requireSlurm(t)
	dir := t.TempDir()
	c := &slurmCluster{t: t, dir: dir}
	// Every process of the cluster, jobs included, carries this in its
	// environment: the last cleanup kills what still does.
	marker := "SYNTHPIPE_SLURM_TESTBED=" + dir
	t.Cleanup(func() { killMarked(marker) })
	c.env = []string{marker, "SLURM_CONF=" + c.path("slurm.conf")}
	for _, d := range []string{"munge", "state", "spool"} {
		if err := os.MkdirAll(c.path(d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	c.startMunge()
	writeFile(t, c.path("slurm.conf"), c.config(), 0o644)
	c.startDaemon("slurmctld", func() bool {
		out, _ := c.command("scontrol", "ping").CombinedOutput()
		return strings.Contains(string(out), "is UP")
	}, "slurmctld", "-D", "-f", c.path("slurm.conf"))
	c.startDaemon("slurmd", func() bool {
		out, _ := c.command("sinfo", "-h", "-n", "localhost", "-o", "%T").Output()
		return strings.TrimSpace(string(out)) == "idle"
	}, "slurmd", "-D", "-f", c.path("slurm.conf"), "-N", "localhost")
	t.Cleanup(c.cancelAll) // runs first: jobs end before the daemons do
	return c
}

func (c *slurmCluster) path(name string) string { return filepath.Join(c.dir, name) }

// command is a Slurm command (or any program) run against the cluster.
func (c *slurmCluster) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), c.env...)
	return cmd
}

// run runs a Slurm command that must succeed and returns its output.
func (c *slurmCluster) run(name string, args ...string) string {
	c.t.Helper()
	out, err := c.command(name, args...).CombinedOutput()
	if err != nil {
		c.t.Fatalf("%s %s: %v\n%s\n%s", name, strings.Join(args, " "), err, out, c.logs())
	}
	return strings.TrimSpace(string(out))
}

func (c *slurmCluster) startMunge() {
	key := make([]byte, 1024)
	rand.Read(key)
	writeFile(c.t, c.path("munge/munge.key"), string(key), 0o400)
	// --force: the key and socket live under /tmp, which munged finds too
	// open; only this test's processes use them.
	c.startDaemon("munged", func() bool {
		_, err := os.Stat(c.path("munge/munge.sock"))
		return err == nil
	}, "munged", "-F", "--force", "--socket="+c.path("munge/munge.sock"), "--key-file="+c.path("munge/munge.key"),
		"--pid-file="+c.path("munge/munged.pid"), "--seed-file="+c.path("munge/munged.seed"), "--log-file="+c.path("munged.log"))
}

// startDaemon starts a daemon in a process group of its own, logging to
// DIR/NAME.out, and returns once ready says it serves.
func (c *slurmCluster) startDaemon(name string, ready func() bool, args ...string) {
	c.t.Helper()
	cmd := c.command(args[0], args[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := os.Create(c.path(name + ".out"))
	if err != nil {
		c.t.Fatal(err)
	}
	defer out.Close() // the daemon has its own copy
	cmd.Stdout, cmd.Stderr = out, out
	startServer(c.t, cmd, name, "answer", c.logs, ready)
}

// config is the cluster's slurm.conf: this machine as its one node, with
// its own CPUs and memory, shared by up to 8 jobs at a time (a task of the
// recipe mostly waits on the server), on two free ports. The backfill
// scheduler, which starts the array once the server job runs (a
// dependency the main scheduler leaves to it), looks every second instead
// of every 30: the array starts when it may, not up to half a minute later.
func (c *slurmCluster) config() string {
	out, err := exec.Command("slurmd", "-C").Output()
	if err != nil {
		c.t.Fatalf("slurmd -C: %v", err)
	}
	hw := regexp.MustCompile(`CPUs=(\d+) .*RealMemory=(\d+)`).FindSubmatch(out)
	if hw == nil {
		c.t.Fatalf("slurmd -C names no CPUs and RealMemory:\n%s", out)
	}
	ctldPort := freeLoopbackPort(c.t)
	slurmdPort := freeLoopbackPort(c.t)
	for slurmdPort == ctldPort {
		slurmdPort = freeLoopbackPort(c.t)
	}
	return fmt.Sprintf(`# synthpipe test cluster: one node, this machine, nothing shared with a system Slurm
ClusterName=synthpipetest
SlurmctldHost=localhost
SlurmctldPort=%d
SlurmdPort=%d
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=%s
StateSaveLocation=%s
SlurmdSpoolDir=%s
SlurmctldPidFile=%s
SlurmdPidFile=%s
SlurmctldLogFile=%s
SlurmdLogFile=%s
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
MailProg=/bin/true
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerParameters=bf_interval=1
ReturnToService=2
KillWait=60
MinJobAge=3600
NodeName=localhost CPUs=%s RealMemory=%s State=UNKNOWN
PartitionName=test Nodes=localhost Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:8
`, ctldPort, slurmdPort, c.path("munge/munge.sock"), c.path("state"), c.path("spool"),
		c.path("slurmctld.pid"), c.path("slurmd.pid"), c.path("slurmctld.log"), c.path("slurmd.log"), hw[1], hw[2])
}

// logs is the end of each daemon's log, for a failure message.
func (c *slurmCluster) logs() string {
	var b strings.Builder
	for _, name := range []string{"munged.log", "slurmctld.log", "slurmd.log"} {
		log, _ := os.ReadFile(c.path(name))
		fmt.Fprintf(&b, "--- %s:\n%s\n", name, tail(string(log), 2000))
	}
	return b.String()
}

// cancelAll cancels every job of the cluster and waits (a bound for a busy
// machine) until none is left running.
func (c *slurmCluster) cancelAll() {
	c.command("scancel", "--user=root").Run()
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		out, err := c.command("squeue", "-h", "-o", "%i").Output()
		if err != nil || strings.TrimSpace(string(out)) == "" {
			return
		}
	}
}

// killMarked kills every process whose environment holds marker: what a
// daemon or job of the test cluster left behind (slurmstepd, a task's
// processes), whatever its process group.
func killMarked(marker string) {
	procs, _ := filepath.Glob("/proc/[0-9]*/environ")
	for _, p := range procs {
		env, err := os.ReadFile(p)
		if err != nil || !strings.Contains("\x00"+string(env)+"\x00", "\x00"+marker+"\x00") {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p))); err == nil && pid != os.Getpid() {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// state is a job's (or array task's) state as squeue shows it, "" once it
// has ended.
func (c *slurmCluster) state(job string) string {
	out, _ := c.command("squeue", "-h", "-j", job, "-o", "%T").Output()
	return strings.TrimSpace(string(out))
}

// waitState waits (polling squeue: Slurm has no event to wait on) until
// job is in state want ("" for ended).
func (c *slurmCluster) waitState(job, want string) {
	c.t.Helper()
	waitFor(c.t, 5*time.Minute, fmt.Sprintf("job %s to be %q (it is %q)", job, want, c.state(job)), func() bool {
		time.Sleep(200 * time.Millisecond)
		return c.state(job) == want
	})
}

// jobField is FIELD=VALUE of scontrol show job, for a job that may have ended.
func (c *slurmCluster) jobField(job, field string) string {
	c.t.Helper()
	m := regexp.MustCompile(`\b` + field + `=(\S+)`).FindStringSubmatch(c.run("scontrol", "show", "job", job))
	if m == nil {
		c.t.Fatalf("scontrol show job %s has no %s", job, field)
	}
	return m[1]
}

// requeueNow requeues a task, as preemption or an administrator does, and
// lets it start again without Slurm's two-minute hold, from the next
// second on. The hold keeps a requeued job from starting while its last
// run's credential is being revoked: slurmd refuses a launch whose
// credential is no newer, in whole seconds, than the revocation ("Job
// credential revoked"; the task then fails with 1:0 instead of running
// again). The task is PENDING once the node has ended its last run, which
// revokes the credential first, so that a start in a later second than
// that is never refused.
func (c *slurmCluster) requeueNow(task string, requeue bool) {
	c.t.Helper()
	if requeue {
		c.run("scontrol", "requeue", task)
	}
	c.waitState(task, "PENDING")
	c.run("scontrol", "update", "JobId="+task, "StartTime=now+1")
}

// slurmDatasets are the array's datasets, one task each, in task order.
var slurmDatasets = []string{"chat", "code", "math", "tools"}

// slurmBudget is each dataset's token budget: it holds all of the bundled
// chat, code and math answers, and cuts tools'.
const slurmBudget = 7000

// TestRecipeSlurmArray submits the job of the README's "Running on a Slurm
// cluster" to a real Slurm: llm-sim as the server job, the datasets as an
// array throttled to 3 tasks at once that starts with the server job and
// reads its URL file, and the job that cancels the server once the array is
// done. While the array runs, one task is requeued as preemption does
// (scontrol requeue: SIGTERM, a drain, then the task runs again), one is
// told its time limit is near (the SIGUSR1 of --signal=B:USR1@N: it drains
// and requeues itself), and one is killed at once (kill -9 of all its
// processes; it fails and is requeued). Every dataset must end complete,
// each record once, its budget held.
func TestRecipeSlurmArray(t *testing.T) {
	t.Parallel()
	requireTools(t, append(recipeTools, "tokstat")...)
	c := startSlurm(t)
	data := recipeData(t, slurmDatasets...)
	work := t.TempDir() // where the jobs run and Slurm writes their output
	scripts, err := filepath.Abs(filepath.Join("..", "scripts"))
	if err != nil {
		t.Fatal(err)
	}
	vocab, err := bundledVocabSize()
	if err != nil {
		t.Fatal(err)
	}
	// A slow server keeps each run going for tens of seconds, so that every
	// interruption lands in the middle of one.
	c.env = append(c.env, recipeEnv(data, "")...)
	c.env = append(c.env, "SYNTHPIPE_URL=", "SYNTHPIPE_URL_FILE="+filepath.Join(work, "server.url"),
		"SYNTHPIPE_SCRIPTS="+scripts, fmt.Sprintf("SYNTHPIPE_BUDGET=%d", slurmBudget), "SYNTHPIPE_SERVER=llm-sim",
		fmt.Sprintf("SYNTHPIPE_SERVER_ARGS=--lengths uniform:1,24 --vocab-size %d --step-time 100ms --max-running-requests 16", vocab))
	sbatch := func(args ...string) string {
		cmd := c.command("sbatch", append([]string{"--parsable"}, args...)...)
		cmd.Dir = work
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("sbatch %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	server := sbatch(filepath.Join(scripts, "slurm", "server.sbatch"))
	array := sbatch(append([]string{"--dependency=after:" + server, fmt.Sprintf("--array=0-%d%%3", len(slurmDatasets)-1),
		filepath.Join(scripts, "slurm", "run-array.sbatch"), "datasets"}, slurmDatasets...)...)
	sbatch("--dependency=afterany:"+array, "--wrap", "scancel "+server)
	task := func(k int) string { return fmt.Sprintf("%s_%d", array, k) }

	c.waitForProgress(data, "chat")
	c.requeueNow(task(0), true)
	c.waitForProgress(data, "math")
	c.run("scancel", "--batch", "--signal=USR1", task(2))
	c.requeueNow(task(2), false)
	pgid := c.waitForProgress(data, "tools")
	syscall.Kill(-pgid, syscall.SIGKILL)
	c.waitState(task(3), "")
	c.requeueNow(task(3), true)

	c.waitState(array, "")
	c.waitState(server, "")
	for k, d := range slurmDatasets {
		state, exit, restarts := c.jobField(task(k), "JobState"), c.jobField(task(k), "ExitCode"), c.jobField(task(k), "Restarts")
		if state != "COMPLETED" || exit != "0:0" {
			out, _ := os.ReadFile(filepath.Join(work, fmt.Sprintf("slurm-%s.out", task(k))))
			t.Errorf("task %s (%s): %s, exit %s, want COMPLETED, 0:0\n%s", task(k), d, state, exit, tail(string(out), 3000))
		}
		if interrupted := d != "code"; interrupted != (restarts != "0") {
			t.Errorf("task %s (%s) restarted %s times", task(k), d, restarts)
		}
	}
	if state := c.jobField(server, "JobState"); state != "CANCELLED" {
		t.Errorf("the server job is %s after the array, want CANCELLED (by the afterany job)", state)
	}
	checkSlurmDatasets(t, data)
}

// waitForProgress waits until a dataset's run holds its lock and has
// written a record, and returns the run's process group.
func (c *slurmCluster) waitForProgress(data, dataset string) int {
	c.t.Helper()
	dir := filepath.Join(data, dataset)
	var pgid int
	waitFor(c.t, 5*time.Minute, dataset+"'s first record", func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, ".lock"))
		m := regexp.MustCompile(`process group (\d+)`).FindSubmatch(b)
		if m == nil || !lockHeld(filepath.Join(dir, ".lock")) {
			return false
		}
		pgid, _ = strconv.Atoi(string(m[1]))
		f, err := readJSONL(filepath.Join(dir, "out.jsonl"))
		return err == nil && len(f.lines) > 0
	})
	return pgid
}

// checkSlurmDatasets: every dataset holds each of its records once, whole,
// within its budget: all of its prompts, or as many as the budget held,
// and says so in its status file; the interrupted runs' logs tell how they
// stopped; tokstat shows the whole array's job finished.
func checkSlurmDatasets(t *testing.T, data string) {
	t.Helper()
	cut := 0
	for _, d := range slurmDatasets {
		recs := readRecipeOutput(t, filepath.Join(data, d, "out.jsonl")) // fails on an id written twice
		st, err := statusfile.Read(filepath.Join(data, d, "status.json"))
		if err != nil {
			t.Fatal(err)
		}
		n := totalTokens(recs)
		switch {
		case n > slurmBudget:
			t.Errorf("%s: %d tokens, past its budget of %d", d, n, slurmBudget)
		case len(recs) == promptCount(t, data, d):
		case st.Exit != nil && strings.HasPrefix(st.Exit.Reason, "budget reached"):
			cut++
		default:
			t.Errorf("%s: %d of %d prompts answered, %d tokens of %d, and the last run ended with %+v", d, len(recs), promptCount(t, data, d), n, slurmBudget, st.Exit)
		}
		log := checkLog(t, filepath.Join(data, d, "run.log"))
		if d != "code" && strings.Count(log, "run-array.sbatch: Slurm task ") < 2 {
			t.Errorf("%s's run.log does not show the task run twice:\n%s", d, log)
		}
		if (d == "chat" || d == "math") && !strings.Contains(log, "run-dataset: stopped by SIGTERM") {
			t.Errorf("%s's run.log does not show its run stopped by SIGTERM:\n%s", d, log)
		}
	}
	if cut == 0 {
		t.Errorf("no dataset was cut by the budget of %d tokens: lower it so that the test shows the budget held", slurmBudget)
	}
	code, view, _ := runTool(t, time.Minute, nil, nil, "tokstat", data)
	for _, d := range slurmDatasets {
		if code != 0 || !regexp.MustCompile(`(?m)^`+d+` +finished `).Match(view) {
			t.Errorf("tokstat %s: exit %d, no finished row for %s:\n%s", data, code, d, view)
		}
	}
}

// runArrayTask runs scripts/slurm/run-array.sbatch as array task k would
// run it (the script needs nothing of Slurm but SLURM_ARRAY_TASK_ID to pick
// its run) and returns its exit status and stderr.
func runArrayTask(t *testing.T, env []string, k int, args ...string) (int, string) {
	t.Helper()
	env = append(slices.Clip(env), fmt.Sprintf("SLURM_ARRAY_TASK_ID=%d", k), "SLURM_ARRAY_JOB_ID=7")
	return runRecipe(t, env, filepath.Join("slurm", "run-array.sbatch"), args...)
}

// TestRecipeSlurmTaskArgs: an array task runs the dataset or shard its
// index names, and an index past the list, or a job with no server, is
// refused with 64 and what to do.
func TestRecipeSlurmTaskArgs(t *testing.T) {
	t.Parallel()
	requireTools(t, recipeTools...)
	data := recipeData(t, "chat")
	// The scripts are found in scripts/ of the folder the job was submitted from.
	env := append(recipeEnv(data, startLLMSim(t)), "SYNTHPIPE_SCRIPTS=", "SLURM_SUBMIT_DIR="+repoRoot(t))
	var shards []string
	for k := range 2 {
		if code, stderr := runArrayTask(t, env, k, "shards", "chat", "2"); code != 0 {
			t.Fatalf("task %d of shards chat 2: exit %d\n%s", k, code, tail(stderr, 3000))
		}
		shards = append(shards, filepath.Join(data, "chat", fmt.Sprintf("out.shard-%d-of-2.jsonl", k)))
	}
	if got, want := len(readRecipeOutput(t, shards...)), promptCount(t, data, "chat"); got != want {
		t.Errorf("the two shard tasks wrote %d records, want one per prompt, %d", got, want)
	}
	log := checkLog(t, filepath.Join(data, "chat", "run.log"))
	for k := range 2 {
		if !strings.Contains(log, fmt.Sprintf("chat %d/2 run-array.sbatch: Slurm task 7_%d (go 1) on ", k, k)) {
			t.Errorf("run.log does not name task 7_%d:\n%s", k, log)
		}
	}

	refusals := []struct {
		k      int
		env    []string
		args   []string
		saying string
	}{
		{2, env, []string{"datasets", "chat", "code"}, "array task 2, but only 2 datasets named (chat code): submit with --array=0-1"},
		{4, env, []string{"shards", "chat", "4"}, "array task 4, but chat has only 4 shards: submit with --array=0-3"},
		{0, env, []string{"chat"}, "usage: run-array.sbatch datasets DATASET... | shards DATASET N"},
		{0, append(slices.Clip(env), "SYNTHPIPE_URL="), []string{"datasets", "chat"}, "set SYNTHPIPE_URL to the server's base URL, or SYNTHPIPE_URL_FILE"},
	}
	for _, r := range refusals {
		code, stderr := runArrayTask(t, r.env, r.k, r.args...)
		if code != 64 || !strings.Contains(stderr, r.saying) {
			t.Errorf("task %d of %v: exit %d, want 64 saying %q:\n%s", r.k, r.args, code, r.saying, stderr)
		}
	}
	// Run outside an array, or given an index that is not one: 64, not
	// bash's own message and status.
	for index, saying := range map[string]string{
		"":    "not a Slurm array task (SLURM_ARRAY_TASK_ID is not set): submit with sbatch --array=0-N",
		"1_2": `SLURM_ARRAY_TASK_ID is "1_2", not an array index`,
	} {
		code, stderr := runRecipe(t, append(slices.Clip(env), "SLURM_ARRAY_TASK_ID="+index), filepath.Join("slurm", "run-array.sbatch"), "datasets", "chat")
		if code != 64 || !strings.Contains(stderr, "run-array.sbatch: "+saying) {
			t.Errorf("SLURM_ARRAY_TASK_ID=%q: exit %d, want 64 saying %q:\n%s", index, code, saying, stderr)
		}
	}
}
