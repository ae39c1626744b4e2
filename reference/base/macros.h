// Provides the preprocessor helpers shared by the project's macros.
#ifndef FAULTLINE_REFERENCE_BASE_MACROS_H_
#define FAULTLINE_REFERENCE_BASE_MACROS_H_

// Pastes two tokens after expanding them (FL_CONCAT(name_, __LINE__)).
#define FL_CONCAT_INNER(a, b) a##b
#define FL_CONCAT(a, b) FL_CONCAT_INNER(a, b)

#endif  // FAULTLINE_REFERENCE_BASE_MACROS_H_
