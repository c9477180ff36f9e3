// cxx.cc - a seed for fuzz-symbolize: C++ names for the demangler
// (namespaces, templates, a member function, an operator) and an inlined
// template, still without any runtime library.
namespace sp_seed {
template <typename T, int N> struct Vec {
	T v[N];
	__attribute__((always_inline)) inline T sum() const
	{
		T s = 0;
		for (int i = 0; i < N; i++)
			s += v[i];
		return s;
	}
	__attribute__((noinline)) T dot(const Vec &o) const
	{
		T s = 0;
		for (int i = 0; i < N; i++)
			s += v[i] * o.v[i];
		return s + sum();
	}
	Vec operator+(const Vec &o) const
	{
		Vec r;
		for (int i = 0; i < N; i++)
			r.v[i] = v[i] + o.v[i];
		return r;
	}
};

__attribute__((noinline)) float run(int n)
{
	Vec<float, 4> a = {{1, 2, 3, 4}}, b = {{5, 6, 7, 8}};
	float s = 0;
	for (int i = 0; i < n; i++)
		s += (a + b).dot(a);
	return s;
}
} // namespace sp_seed

volatile float sp_seed_sink;

extern "C" void _start()
{
	for (;;)
		sp_seed_sink = sp_seed::run(3);
}
