// Corpus case "include_solution" (someone else's work): includes the reference solution
// through a macro, so that no #include line names it. The compiler's own dependency list
// names the file it read, whatever the spelling.
#define LABKIT_STRINGIFY(x) #x
#define LABKIT_PATH(x) LABKIT_STRINGIFY(../../solutions/vectorAdd/x)
#include LABKIT_PATH(vectorAdd.cu)
