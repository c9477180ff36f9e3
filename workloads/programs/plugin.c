/* plugin.c - a library that dlopen_main loads half way through its run. */
volatile double plugin_sink;

__attribute__((noinline)) void plugin_inner(long n)
{
	double x = 0;
	for (long i = 0; i < n; i++)
		x += (double)i * 0.5;
	plugin_sink += x;
}

__attribute__((noinline)) void plugin_work(long rounds)
{
	for (long r = 0; r < rounds; r++)
		plugin_inner(100000);
}
