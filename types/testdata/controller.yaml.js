=== line 19
// @ts-check
/// <reference path="metascript.d.ts" />
















        /** @type {metascript.CompositeControllerSync} */ function sync(request) {
          return {children: []};
        }

          /** @type {metascript.CompositeControllerFinalize} */ function finalize(request) { return {finalized: true}; }
=== line 11
// @ts-check
/// <reference path="metascript.d.ts" />








          const customize = (request) => ({relatedResources: []});
/** @type {metascript.CompositeControllerCustomize} */ var __hook_customize = customize;
