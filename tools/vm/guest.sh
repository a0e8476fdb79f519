#!/bin/sh
# Runs inside the VM: run a command, then save the kernel log; exit with the command's status.
#   guest.sh DMESG_FILE COMMAND...
log=$1
shift
export PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:$PATH"
"$@"
status=$?
dmesg > "$log" 2>&1
exit $status
