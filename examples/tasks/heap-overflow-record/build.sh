#!/bin/sh
# How crash_report.txt was made: build with AddressSanitizer and run on the crashing input.
set -e
cd "$(dirname "$0")"
gcc -g -O0 -fsanitize=address -fno-omit-frame-pointer -o /tmp/record_demo src/main.c src/record.c
/tmp/record_demo "alpha:1" "temperature:42"
