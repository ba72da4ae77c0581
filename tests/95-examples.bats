#!/usr/bin/env bats
# 95-examples: every examples/*/run.sh runs to completion (on small data)

load helper

@test "examples/numpy-store" {
	run -0 sh "$SPIRT_ROOT/examples/numpy-store/run.sh" "$PWD/w"
	assert_output --partial 'round trip: identical float32 (128, 10)'
	assert_output --partial 'corrupted record refused with exit 65'
}
