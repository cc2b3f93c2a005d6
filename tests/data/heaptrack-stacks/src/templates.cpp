// templates.cpp -- C++ allocations through operator new / new[] (heaptrack_print drops those
// frames from the leaf of a trace) inside template functions (heaptrack_print shortens
// template arguments to `<>` by default) and an operator<< overload, plus a static
// initializer (__static_initialization_and_destruction_0 is one of heaptrack_print's stop
// frames). Written for metatf's tests (no third-party code). Built -O0 -g.
#include <cstddef>
#include <ostream>

template <typename T, int N>
struct Box
{
    T* items = new T[N];
    ~Box() { delete[] items; }
};

template <typename T>
T* make_one(T value)
{
    return new T(value);
}

struct Sink
{
    int* last = nullptr;
};

Sink& operator<<(Sink& s, int v)
{
    s.last = make_one<int>(v);
    return s;
}

static int* early = new int[3]; // allocated by the static initializer; leaked

int main()
{
    Sink s;
    for (int i = 0; i < 3; i++) {
        Box<long, 4> box;
        box.items[0] = i;
        s << i; // leaks the previous value's block
    }
    Box<char, 100>* kept = new Box<char, 100>; // two leaked blocks
    double* d = make_one<double>(1.5);
    delete d;
    early[0] = kept->items[0];
    return 0;
}
