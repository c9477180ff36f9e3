#!/usr/bin/perl
# folded-check.pl - reads collapsed stacks exactly the way flamegraph.pl
# (github.com/brendangregg/FlameGraph) reads its input, and fails where
# flamegraph.pl would complain or silently misread. Debian ships no
# flamegraph package, so these are its rules, replicated:
#
#  1. each line is chomped and must match /^(.*)\s+?(\d+(?:\.\d*)?)$/
#     (stack, then the count as the LAST field); flamegraph.pl counts other
#     lines and prints "Ignored N lines with invalid format";
#  2. it then tries the same regex on the stack part: if that matches too,
#     the line is read as differential input ("stack count1 count2"). For
#     one-count input that would mean a frame ending in " <digits>" was
#     eaten as a count, so it must not match; with --diff it must;
#  3. the stack is split on ";" into frames: an empty frame would be drawn
#     as a nameless box, so none may be empty;
#  4. export_stacks writes integer counts; we check that, and that no frame
#     contains whitespace (the escaping rule) or is the empty stack.
#
# usage: folded-check.pl [--diff] [--total N] FILE...
use strict;
use warnings;

my $diff = 0;
my $want_total;
while (@ARGV && $ARGV[0] =~ /^--/) {
	my $opt = shift @ARGV;
	if ($opt eq '--diff') { $diff = 1; }
	elsif ($opt eq '--total') { $want_total = shift @ARGV; }
	else { die "folded-check.pl: unknown option $opt\n"; }
}

my ($ignored, $bad, $lines, $total) = (0, 0, 0, 0);
while (my $line = <>) {
	chomp $line;
	$lines++;
	my ($stack, $samples) = ($line =~ /^(.*)\s+?(\d+(?:\.\d*)?)$/);
	unless (defined $samples and defined $stack) {
		$ignored++;
		print STDERR "ignored: $line\n";
		next;
	}
	my $samples2;
	if ($stack =~ /^(.*)\s+?(\d+(?:\.\d*)?)$/) {
		$samples2 = $samples;
		($stack, $samples) = ($1, $2);
	}
	if ($diff != defined $samples2) {
		$bad++;
		print STDERR ($diff ? "not differential: $line\n"
				    : "read as differential (a frame ends in a number): $line\n");
		next;
	}
	if ($samples !~ /^\d+$/ || (defined $samples2 && $samples2 !~ /^\d+$/)) {
		$bad++;
		print STDERR "count is not an integer: $line\n";
	}
	if ($stack eq '' || $stack =~ /\s/) {
		$bad++;
		print STDERR "empty stack or whitespace in a frame: $line\n";
	}
	foreach my $frame (split /;/, $stack, -1) {
		if ($frame eq '') {
			$bad++;
			print STDERR "empty frame: $line\n";
			last;
		}
	}
	$total += defined $samples2 ? $samples2 : $samples;
}
print STDERR "Ignored $ignored lines with invalid format\n" if $ignored;
if ($lines == 0) {
	print STDERR "no input lines\n";
	exit 1;
}
if (defined $want_total && $total != $want_total) {
	print STDERR "total $total, expected $want_total\n";
	exit 1;
}
exit(($ignored || $bad) ? 1 : 0);
