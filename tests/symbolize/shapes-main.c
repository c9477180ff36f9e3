/* shapes-main.c - a program around shapes.c, linked with a chosen build-id. */
#include "tests/symbolize/shapes.h"

int main(int argc, char **argv)
{
	(void)argv;
	return sp_shape_run(argc) == 12345;
}
