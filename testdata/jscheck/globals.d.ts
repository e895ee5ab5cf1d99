// What the pages put on window for the tests and the console (static/*.js).
interface Window {
  viewer?: any;
  viewerFrameMenu?: any;
  viewerTimeline?: any;
  viewerTimeOrder?: any;
}
