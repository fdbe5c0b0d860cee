#!/usr/bin/env bash
# A one-machine Slurm cluster for trying the job scripts of this folder: munged, slurmctld and
# one slurmd on this host, every file of theirs (configuration, key, state, logs, pid files,
# sockets) in DIR, nothing in /etc or /var.
#
#   local-cluster.sh check          # says what is missing (Debian: slurmctld slurmd slurm-client munge)
#   local-cluster.sh start DIR      # writes DIR/slurm.conf, starts the daemons, waits for the node
#   export SLURM_CONF=DIR/slurm.conf
#   sbatch ...; squeue; sinfo
#   local-cluster.sh stop DIR       # cancels the jobs left and stops the daemons
#
# The daemons and the jobs run as root: the clover sandbox needs root on the node. Settings:
# SLURMCTLD_PORT and SLURMD_PORT (default 6817 and 6818, Slurm's own) when those are taken.
set -euo pipefail

PATH=$PATH:/usr/sbin:/sbin
TOOLS=(munged slurmctld slurmd sbatch squeue sinfo scancel scontrol)

usage() {
    echo "usage: local-cluster.sh check | start DIR | stop DIR" >&2
    exit 2
}

check() {
    local missing=()
    for t in "${TOOLS[@]}"; do
        command -v "$t" > /dev/null || missing+=("$t")
    done
    if [ "${#missing[@]}" -ne 0 ]; then
        echo "local-cluster: not found: ${missing[*]}; install them (Debian: apt-get install slurmctld slurmd slurm-client munge, or cargo xtask setup)" >&2
        return 1
    fi
    if [ "$(id -u)" -ne 0 ]; then
        echo "local-cluster: the daemons and the sandbox need root" >&2
        return 1
    fi
}

# Whether the process in pid file $1 is alive.
alive() {
    [ -s "$1" ] && kill -0 "$(cat "$1")" 2> /dev/null
}

# Waits up to $1 tenths of a second for the command after it to succeed.
wait_for() {
    local tenths=$1
    shift
    for ((i = 0; i < tenths; i++)); do
        if "$@"; then
            return 0
        fi
        sleep 0.1
    done
    return 1
}

node_idle() {
    [ "$(sinfo --noheader --nodes="$NODE" --format=%t 2> /dev/null)" = idle ]
}

no_jobs() {
    [ -z "$(squeue --noheader --format=%i 2> /dev/null)" ]
}

# Stops the daemon of pid file $1: SIGTERM, five seconds' grace, SIGKILL.
stop_daemon() {
    alive "$1" || return 0
    local pid
    pid=$(cat "$1")
    kill -TERM "$pid" 2> /dev/null || true
    if ! wait_for 50 eval "! kill -0 $pid 2> /dev/null"; then
        kill -KILL "$pid" 2> /dev/null || true
        wait_for 50 eval "! kill -0 $pid 2> /dev/null" || true
    fi
    rm -f "$1"
}

start() {
    check
    mkdir -p "$DIR/state" "$DIR/spool"
    if alive "$DIR/slurmctld.pid" || alive "$DIR/slurmd.pid" || alive "$DIR/munged.pid"; then
        echo "local-cluster: a cluster is running in $DIR already; stop it first" >&2
        exit 1
    fi
    # slurmd -C prints this machine as a NodeName line (CPUs, sockets, cores, RealMemory), the
    # exact figures slurmd will report, so the node is never drained for a mismatch.
    local node_line
    node_line=$(slurmd -C | head -n 1)
    NODE=$(sed 's/^NodeName=\([^ ]*\).*/\1/' <<< "$node_line")

    if [ ! -f "$DIR/munge.key" ]; then
        dd if=/dev/urandom of="$DIR/munge.key" bs=1024 count=1 status=none
        chmod 400 "$DIR/munge.key"
    fi
    cat > "$DIR/slurm.conf" << EOF
# Written by local-cluster.sh: one node, everything in $DIR.
ClusterName=clover-local
SlurmctldHost=$NODE(127.0.0.1)
SlurmctldPort=${SLURMCTLD_PORT:-6817}
SlurmdPort=${SLURMD_PORT:-6818}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$DIR/munge.socket
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/slurmctld.log
SlurmdLogFile=$DIR/slurmd.log
# No cgroup plugin: Slurm leaves the cgroup tree alone, and the clover sandbox makes its own.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/builtin
# A job whose dependency can never be met (a failed array task before a join) is cancelled
# instead of pending for ever.
DependencyParameters=kill_invalid_depend
# Finished jobs are kept for four seconds at least, not five minutes: sbatch --wait then polls
# every two seconds instead of every eight or 32.
MinJobAge=4
ReturnToService=2
$node_line NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=local Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
    export SLURM_CONF=$DIR/slurm.conf

    munged --key-file="$DIR/munge.key" --socket="$DIR/munge.socket" \
        --pid-file="$DIR/munged.pid" --log-file="$DIR/munged.log" \
        --seed-file="$DIR/munged.seed"
    # The daemons fork into the background and write their pid files; -i: no state to recover.
    slurmctld -i
    slurmd
    if ! wait_for 300 node_idle; then
        echo "local-cluster: node $NODE did not come up within 30 s; the logs:" >&2
        tail -n 20 "$DIR"/slurmctld.log "$DIR"/slurmd.log "$DIR"/munged.log >&2 || true
        stop
        exit 1
    fi
    echo "local-cluster: node $NODE is idle; export SLURM_CONF=$DIR/slurm.conf" >&2
}

stop() {
    export SLURM_CONF=$DIR/slurm.conf
    if alive "$DIR/slurmctld.pid"; then
        # Jobs first: a job step outlives slurmd unless it is cancelled.
        squeue --noheader --format=%i | xargs -r scancel || true
        wait_for 300 no_jobs || echo "local-cluster: jobs still ending after 30 s" >&2
        scontrol shutdown > /dev/null 2>&1 || true
    fi
    stop_daemon "$DIR/slurmd.pid"
    stop_daemon "$DIR/slurmctld.pid"
    stop_daemon "$DIR/munged.pid"
}

case "${1:-}" in
    check) check ;;
    start | stop)
        [ $# -eq 2 ] || usage
        if [ "$1" = stop ] && [ ! -d "$2" ]; then
            exit 0
        fi
        mkdir -p "$2"
        DIR=$(cd "$2" && pwd)
        "$1"
        ;;
    *) usage ;;
esac
