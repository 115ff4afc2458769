// Corpus case "include_machine_file" (reading what is not the student's): an #include of a
// file of the grading machine that is not C++ (here /etc/passwd; in an attack, a
// classmate's submission or a secret). The file does not compile, and the compiler's
// messages quote the lines they are about: in the report they would show the file. The
// grader names the include and shows none of the messages.
#include "vectorAdd.h"

#include "/etc/passwd"

void vector_add(const float* a, const float* b, float* c, int n) {}
