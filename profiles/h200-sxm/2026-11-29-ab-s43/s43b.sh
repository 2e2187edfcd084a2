WAIT_S=${WAIT_S:-560} MODE=wait bash tools/device_suite_ab.sh
