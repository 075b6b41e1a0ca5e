/* Where GNUstep's Foundation answers otherwise than Apple's on a path ggml takes while it initialises. */
#import <Foundation/Foundation.h>

/* +[NSString stringWithContentsOfFile:encoding:error:] returns nil for a file it cannot read, and Apple's also sets
   the error; GNUstep's leaves it unset. ggml before v0.4.0 (b6673 to b10361) tests the error, not the string, when it
   loads ggml-metal.metal (there is none here: the libraries node-llama-cpp ships embed it), so under GNUstep it went
   on to compile a nil source instead of giving up on the library as on a Mac. This category method replaces GNUstep's:
   the same string, and on failure the error Apple's sets (NSCocoaErrorDomain, "no such file" or "unknown"). */
@implementation NSString (MCSConformanceAppleErrors)
+ (id)stringWithContentsOfFile:(NSString *)path encoding:(NSStringEncoding)encoding error:(NSError **)error {
  NSError *own = nil;
  NSString *string = [[[self alloc] initWithContentsOfFile:path encoding:encoding error:&own] autorelease];
  if (string == nil && own == nil) {
    const BOOL exists = path != nil && [[NSFileManager defaultManager] fileExistsAtPath:path];
    own = [NSError
        errorWithDomain:NSCocoaErrorDomain
                   code:exists ? NSFileReadUnknownError : NSFileReadNoSuchFileError
               userInfo:path != nil ? [NSDictionary dictionaryWithObject:path forKey:NSFilePathErrorKey] : nil];
  }
  if (string == nil && error != NULL) *error = own;
  return string;
}
@end
